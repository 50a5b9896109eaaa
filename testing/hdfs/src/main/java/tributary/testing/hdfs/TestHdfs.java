package tributary.testing.hdfs;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.MiniDFSCluster.DataNodeProperties;
import org.apache.hadoop.security.UserGroupInformation;

import sun.misc.Signal;

/**
 * The HDFS of Tributary's integration tests: one MiniDFSCluster (a NameNode
 * and N DataNodes in this JVM), NameNode RPC on 127.0.0.1:PORT, every other
 * port ephemeral on 127.0.0.1.
 *
 * <pre>
 *   TestHdfs PORT DATANODES BASEDIR READYFILE [--kerberos DIR PROTECTION CIPHERSUITES]
 * </pre>
 *
 * With --kerberos the cluster is Kerberized (see Kerberos: a MiniKdc in this
 * JVM, its files in DIR, dfs.data.transfer.protection PROTECTION and
 * dfs.encrypt.data.transfer.cipher.suites CIPHERSUITES, "" for none).
 *
 * The file system lives under BASEDIR, which is formatted on start.
 * MiniDFSCluster deletes it when the JVM exits, so nothing worth keeping (the
 * log) may be inside it. Once the cluster serves, READYFILE is written
 * atomically with the cluster's URI; it is removed again on a clean stop.
 *
 * SIGTERM and SIGINT stop the cluster cleanly and exit 0. They are handled
 * here rather than in a shutdown hook because MiniDFSCluster.shutdown removes
 * shutdown hooks of its own, which the JVM refuses while it runs hooks.
 * Exit 1: the cluster could not start (the cause is in the log).
 *
 * With the system property tributary.hdfs.datanode.control=FILE (start.sh
 * --datanode-control), DataNodes can be stopped and restarted while the
 * cluster runs: a line "stop N" or "start N" (N from 1) written to FILE is
 * carried out and FILE removed, and FILE.state then lists "N running" or
 * "N stopped" per DataNode (see datanode.sh). A stopped DataNode is shut
 * down abruptly for its clients (its connections drop, its blocks become
 * unavailable) though its JVM, shared with the NameNode, lives on; it
 * restarts on its old ports with its old blocks.
 */
public final class TestHdfs {
    private TestHdfs() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 4 && !(args.length == 8 && args[4].equals("--kerberos"))) {
            System.err.println("usage: TestHdfs PORT DATANODES BASEDIR READYFILE [--kerberos DIR PROTECTION CIPHERSUITES]");
            System.exit(2);
        }
        int port = Integer.parseInt(args[0]);
        int datanodes = Integer.parseInt(args[1]);
        String baseDir = args[2];
        Path ready = Paths.get(args[3]);

        CountDownLatch stop = new CountDownLatch(1);
        Signal.handle(new Signal("TERM"), sig -> stop.countDown());
        Signal.handle(new Signal("INT"), sig -> stop.countDown());

        long began = System.nanoTime();
        MiniDFSCluster cluster;
        Kerberos kerberos = null;
        try {
            Configuration conf;
            if (args.length == 8) {
                // Before config(): it sets up UserGroupInformation (see Kerberos).
                Kerberos k = Kerberos.start(new File(args[5]));
                kerberos = k;
                conf = config(baseDir, datanodes, c -> k.secure(c, args[6], args[7]));
            } else {
                conf = config(baseDir, datanodes, c -> {});
            }
            cluster = start(conf, port, datanodes, kerberos != null);
        } catch (Throwable e) {
            System.err.println("TestHdfs: the cluster did not start on 127.0.0.1:" + port + ":");
            e.printStackTrace();
            System.exit(1);
            return;
        }
        // Not cluster.getURI(): it names "localhost", which may resolve to
        // ::1 first, while the NameNode listens on 127.0.0.1 only.
        InetSocketAddress rpc = cluster.getNameNode().getNameNodeAddress();
        String uri = "hdfs://" + rpc.getAddress().getHostAddress() + ":" + rpc.getPort();
        if (kerberos != null) {
            kerberos.writeEnv(rpc.getAddress().getHostAddress() + ":" + rpc.getPort(), args[6], args[7]);
        }
        String control = System.getProperty("tributary.hdfs.datanode.control");
        if (control != null && !control.isEmpty()) {
            startDataNodeControl(cluster, Paths.get(control));
        }
        writeAtomically(ready, uri + "\n");
        System.err.printf("TestHdfs: %s serves with %d DataNode(s)%s, up in %.1f s%n",
                uri, datanodes, kerberos == null ? "" : ", Kerberized (data transfer " + args[6] + ")",
                (System.nanoTime() - began) / 1e9);

        stop.await();
        System.err.println("TestHdfs: stopping");
        Files.deleteIfExists(ready);
        cluster.shutdown(true);
        if (kerberos != null) {
            kerberos.stop();
        }
        System.err.println("TestHdfs: stopped");
        System.exit(0);
    }

    /** Settings are more settings applied to the configuration before UserGroupInformation reads it. */
    interface Settings {
        void apply(Configuration conf) throws Exception;
    }

    static Configuration config(String baseDir, int datanodes, Settings more) throws Exception {
        Configuration conf = new HdfsConfiguration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, baseDir);
        // Tests write as users that do not exist here ("tributary").
        conf.setBoolean("dfs.permissions.enabled", false);
        // Without it the NameNode forks `id` for every such user and logs a
        // stack trace when it fails. The key takes effect only through
        // UserGroupInformation, which reads its own copy of the settings.
        conf.set("hadoop.security.group.mapping", "org.apache.hadoop.security.NullGroupsMapping");
        conf.setInt("dfs.replication", Math.min(datanodes, 3));
        // Lets a test ask for small blocks to cross block boundaries cheaply.
        conf.setLong("dfs.namenode.fs-limits.min-block-size", 64 * 1024);
        conf.set("dfs.namenode.http-address", "127.0.0.1:0");
        more.apply(conf);
        UserGroupInformation.setConfiguration(conf);
        return conf;
    }

    static MiniDFSCluster start(Configuration conf, int port, int datanodes, boolean secure) throws IOException {
        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf)
                .nameNodePort(port)
                .numDataNodes(datanodes)
                .format(true)
                // The secure settings name the DataNodes' addresses themselves.
                .checkDataNodeAddrConfig(secure)
                .build();
        cluster.waitActive();
        return cluster;
    }

    /** Serves datanode.sh's requests on a daemon thread (see the class comment). */
    static void startDataNodeControl(MiniDFSCluster cluster, Path control) throws IOException {
        List<String> names = new ArrayList<>();
        for (int i = 0; i < cluster.getDataNodes().size(); i++) {
            names.add(cluster.getDataNodes().get(i).getDatanodeId().getXferAddr());
        }
        Map<Integer, DataNodeProperties> stopped = new HashMap<>();
        Path state = control.resolveSibling(control.getFileName() + ".state");
        writeState(state, names.size(), stopped);
        Thread t = new Thread(() -> {
            while (true) {
                try {
                    Thread.sleep(200);
                    if (!Files.exists(control)) {
                        continue;
                    }
                    String req = new String(Files.readAllBytes(control), StandardCharsets.UTF_8).trim();
                    Files.deleteIfExists(control);
                    String[] f = req.split("\\s+");
                    int n = f.length == 2 ? Integer.parseInt(f[1]) : -1;
                    if (n < 1 || n > names.size()) {
                        System.err.println("TestHdfs: bad DataNode control request: " + req);
                    } else if (f[0].equals("stop") && !stopped.containsKey(n)) {
                        String name = names.get(n - 1);
                        for (int i = 0; i < cluster.getDataNodes().size(); i++) {
                            if (cluster.getDataNodes().get(i).getDatanodeId().getXferAddr().equals(name)) {
                                stopped.put(n, cluster.stopDataNode(i));
                                System.err.println("TestHdfs: DataNode " + n + " (" + name + ") stopped");
                                break;
                            }
                        }
                    } else if (f[0].equals("start") && stopped.containsKey(n)) {
                        cluster.restartDataNode(stopped.remove(n), true);
                        cluster.waitActive();
                        System.err.println("TestHdfs: DataNode " + n + " restarted");
                    } else if (!f[0].equals("stop") && !f[0].equals("start")) {
                        System.err.println("TestHdfs: bad DataNode control request: " + req);
                    }
                    writeState(state, names.size(), stopped);
                } catch (InterruptedException e) {
                    return;
                } catch (Exception e) {
                    System.err.println("TestHdfs: DataNode control failed:");
                    e.printStackTrace();
                }
            }
        }, "datanode-control");
        t.setDaemon(true);
        t.start();
    }

    static void writeState(Path state, int n, Map<Integer, DataNodeProperties> stopped) throws IOException {
        StringBuilder b = new StringBuilder();
        for (int i = 1; i <= n; i++) {
            b.append(i).append(stopped.containsKey(i) ? " stopped\n" : " running\n");
        }
        writeAtomically(state, b.toString());
    }

    static void writeAtomically(Path file, String content) throws IOException {
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        Files.write(tmp, content.getBytes(StandardCharsets.UTF_8));
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
    }
}
