package tributary.testing.hdfs;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.Properties;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.minikdc.MiniKdc;
import org.apache.hadoop.security.ssl.KeyStoreTestUtil;

/**
 * The Kerberos half of the Kerberized test HDFS (TestHdfs --kerberos DIR):
 * a MiniKdc (Apache Kerby, realm EXAMPLE.COM, TCP on localhost, ephemeral
 * port) with the principals hdfs/localhost and HTTP/localhost (the NameNode's
 * and DataNodes' keytab DIR/keytabs/hdfs.keytab) and the client tributary
 * (DIR/keytabs/tributary.keytab), and the secure settings of the cluster, as
 * Hadoop's own SaslDataTransferTestCase makes them: Kerberos RPC, block
 * access tokens, SASL on data transfer (so no privileged ports and no jsvc)
 * at the protection level asked for, HTTPS only with a self-signed keystore.
 *
 * <p>Files in DIR: krb5.conf (the KDC's), keytabs/, kdc/ (Kerby's state),
 * ssl/ (keystores), conf/ (ssl-server.xml and ssl-client.xml, which Hadoop
 * loads from the classpath: start.sh puts DIR/conf on it, so it must exist
 * before the JVM starts) and, once the cluster serves, cluster.env.
 *
 * <p>The KDC must start before anything touches UserGroupInformation: the
 * JDK caches the Kerberos configuration (krb5.conf, the default realm) on
 * first use, and MiniKdc.start only sets java.security.krb5.conf.
 */
final class Kerberos {
    static final String SERVICE = "hdfs/localhost";
    static final String CLIENT = "tributary";

    private final MiniKdc kdc;
    private final File dir;
    private final File hdfsKeytab;
    private final File clientKeytab;
    private final File krb5conf;

    private Kerberos(MiniKdc kdc, File dir) {
        this.kdc = kdc;
        this.dir = dir;
        this.hdfsKeytab = new File(dir, "keytabs/hdfs.keytab");
        this.clientKeytab = new File(dir, "keytabs/" + CLIENT + ".keytab");
        this.krb5conf = new File(dir, "krb5.conf");
    }

    /** start starts the KDC and writes the keytabs and krb5.conf into dir. */
    static Kerberos start(File dir) throws Exception {
        for (String sub : new String[] {"conf", "kdc", "keytabs", "ssl"}) {
            Files.createDirectories(new File(dir, sub).toPath());
        }
        Properties conf = MiniKdc.createConf();
        conf.setProperty(MiniKdc.KDC_BIND_ADDRESS, "localhost");
        conf.setProperty(MiniKdc.KDC_PORT, "0");
        MiniKdc kdc = new MiniKdc(conf, new File(dir, "kdc"));
        kdc.start();
        Kerberos k = new Kerberos(kdc, dir);
        kdc.createPrincipal(k.hdfsKeytab, SERVICE, "HTTP/localhost");
        kdc.createPrincipal(k.clientKeytab, CLIENT);
        Files.copy(kdc.getKrb5conf().toPath(), k.krb5conf.toPath(), StandardCopyOption.REPLACE_EXISTING);
        return k;
    }

    String principal(String name) {
        return name + "@" + kdc.getRealm();
    }

    /**
     * secure adds the cluster's security settings to conf: protection is
     * dfs.data.transfer.protection, cipherSuites (may be empty)
     * dfs.encrypt.data.transfer.cipher.suites.
     */
    void secure(Configuration conf, String protection, String cipherSuites) throws Exception {
        String hdfs = principal(SERVICE);
        conf.set("hadoop.security.authentication", "kerberos");
        conf.setBoolean("hadoop.security.authorization", true);
        conf.set("hadoop.rpc.protection", "authentication");
        conf.set("dfs.namenode.kerberos.principal", hdfs);
        conf.set("dfs.namenode.keytab.file", hdfsKeytab.getPath());
        conf.set("dfs.datanode.kerberos.principal", hdfs);
        conf.set("dfs.datanode.keytab.file", hdfsKeytab.getPath());
        conf.set("dfs.web.authentication.kerberos.principal", principal("HTTP/localhost"));
        conf.set("dfs.web.authentication.kerberos.keytab", hdfsKeytab.getPath());
        conf.setBoolean("dfs.block.access.token.enable", true);
        conf.set("dfs.data.transfer.protection", protection);
        if (!cipherSuites.isEmpty()) {
            conf.set("dfs.encrypt.data.transfer.cipher.suites", cipherSuites);
        }
        // A secure DataNode on unprivileged ports needs both SASL data
        // transfer (above) and HTTPS only ("Cannot start secure DataNode").
        conf.set("dfs.http.policy", "HTTPS_ONLY");
        conf.set("dfs.namenode.https-address", "localhost:0");
        conf.set("dfs.datanode.https.address", "localhost:0");
        conf.setInt("ipc.client.connect.max.retries.on.sasl", 10);
        KeyStoreTestUtil.setupSSLConfig(new File(dir, "ssl").getPath(), new File(dir, "conf").getPath(), conf, false);
        conf.set("dfs.client.https.keystore.resource", KeyStoreTestUtil.getClientSSLConfigFileName());
        conf.set("dfs.https.server.keystore.resource", KeyStoreTestUtil.getServerSSLConfigFileName());
        conf.set("dfs.datanode.address", "127.0.0.1:0");
        conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
        conf.set("dfs.datanode.http.address", "127.0.0.1:0");
        conf.set("dfs.datanode.hostname", "127.0.0.1");
        conf.setBoolean("dfs.namenode.datanode.registration.ip-hostname-check", false);
        conf.setInt("dfs.safemode.extension", 0);
    }

    /**
     * writeEnv writes DIR/cluster.env (KEY=VALUE lines, sourceable) for the
     * cluster whose NameNode RPC is addr.
     */
    void writeEnv(String addr, String protection, String cipherSuites) throws IOException {
        String env = "HDFS_ADDR=" + addr + "\n"
                + "HDFS_NAMENODE_PRINCIPAL=" + principal(SERVICE) + "\n"
                + "HDFS_DATA_TRANSFER_PROTECTION=" + protection + "\n"
                + "HDFS_ENCRYPT_CIPHER_SUITES=" + cipherSuites + "\n"
                + "KRB5_CONFIG=" + krb5conf.getPath() + "\n"
                + "KRB5_REALM=" + kdc.getRealm() + "\n"
                + "KRB5_KDC=" + kdc.getHost() + ":" + kdc.getPort() + "\n"
                + "KRB5_CLIENT_PRINCIPAL=" + principal(CLIENT) + "\n"
                + "KRB5_CLIENT_KEYTAB=" + clientKeytab.getPath() + "\n"
                + "KRB5_HDFS_KEYTAB=" + hdfsKeytab.getPath() + "\n";
        TestHdfs.writeAtomically(new File(dir, "cluster.env").toPath(), env);
    }

    void stop() throws IOException {
        kdc.stop();
        Files.deleteIfExists(new File(dir, "cluster.env").toPath());
    }
}
