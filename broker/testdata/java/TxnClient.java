// TxnClient drives Kafka's Java client (kafka-clients) against a broker for
// broker/txn_java_test.go: "produce" runs interleaved committed and aborted
// transactions with sendOffsetsToTransaction, then fences itself with a
// second producer of the same transactional.id; "consume" prints the values
// of n records read with the given isolation level, one per line.
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnClient {
    static KafkaProducer<String, String> producer(String bootstrap, String txnID) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", txnID);
        p.put("transaction.timeout.ms", "30000");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0], bootstrap = args[1], topic = args[2];
        if (mode.equals("produce")) {
            String txnID = args[3], group = args[4], input = args[5];
            KafkaProducer<String, String> a = producer(bootstrap, txnID);
            a.initTransactions();
            for (int i = 0; i < 6; i++) {
                a.beginTransaction();
                for (int j = 0; j < 10; j++) {
                    a.send(new ProducerRecord<>(topic, 0, "k", "t" + i + "-" + j));
                }
                Map<TopicPartition, OffsetAndMetadata> offsets =
                    Collections.singletonMap(new TopicPartition(input, 0), new OffsetAndMetadata((i + 1) * 10L));
                a.sendOffsetsToTransaction(offsets, new ConsumerGroupMetadata(group));
                // abortTransaction drops records still buffered: flush so
                // that the aborted ones are in the log for read_uncommitted.
                a.flush();
                if (i % 2 == 0) {
                    a.commitTransaction();
                } else {
                    a.abortTransaction();
                }
            }
            // A second instance fences the first.
            KafkaProducer<String, String> b = producer(bootstrap, txnID);
            b.initTransactions();
            try {
                a.beginTransaction();
                a.send(new ProducerRecord<>(topic, 0, "k", "zombie")).get();
                a.commitTransaction();
                System.out.println("NOT FENCED");
            } catch (Exception e) {
                Throwable c = e instanceof KafkaException || e.getCause() == null ? e : e.getCause();
                System.out.println("FENCED " + c.getClass().getSimpleName());
            }
            b.beginTransaction();
            b.send(new ProducerRecord<>(topic, 0, "k", "b-0"));
            b.commitTransaction();
            b.close();
            a.close(Duration.ofSeconds(5));
            return;
        }
        String isolation = args[3];
        int n = Integer.parseInt(args[4]);
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("isolation.level", isolation);
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(Collections.singletonList(tp));
            c.seekToBeginning(Collections.singletonList(tp));
            List<String> got = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 60000;
            while (got.size() < n && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    got.add(r.value());
                }
            }
            for (String v : got) {
                System.out.println(v);
            }
        }
    }
}
