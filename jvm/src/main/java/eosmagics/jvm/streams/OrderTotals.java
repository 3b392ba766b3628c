package eosmagics.jvm.streams;

import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Order lines summed per customer under exactly_once_v2: the Kafka Streams app of the JVM tests.
 *
 * <p>Input: key = customer, value = the line's amount (a decimal long as a string). The lines are
 * grouped by key (no repartition: the producer already keys by customer) and summed into a KTable
 * backed by the persistent (RocksDB) store {@code totals}, so the app has a changelog topic
 * {@code <application.id>-totals-changelog}; every update goes to the output topic as the
 * customer's running total (the record cache is off, so each line yields one output record).
 *
 * <pre>
 *   java ... eosmagics.jvm.streams.OrderTotals BOOTSTRAP APP_ID STATE_DIR INPUT OUTPUT [key=value ...]
 * </pre>
 *
 * <p>{@code key=value} arguments are Streams (and client) properties; {@code sasl.username} and
 * {@code sasl.password} become a PLAIN {@code sasl.jaas.config}. It prints {@code STATE RUNNING}
 * (and every other state change) on stdout, so that a test knows when it runs, and stops cleanly on
 * SIGTERM. A thread that dies is replaced (REPLACE_THREAD) and says so on stdout.
 */
public final class OrderTotals {
    private OrderTotals() {}

    public static void main(String[] args) throws InterruptedException {
        if (args.length < 5) {
            System.err.println("usage: OrderTotals BOOTSTRAP APP_ID STATE_DIR INPUT OUTPUT [key=value ...]");
            System.exit(2);
        }
        String input = args[3];
        String output = args[4];
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[2]);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "3");
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
        props.put(StreamsConfig.consumerPrefix("session.timeout.ms"), "6000");
        props.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), "1000");
        props.put(StreamsConfig.producerPrefix("transaction.timeout.ms"), "6000");
        props.put(StreamsConfig.producerPrefix("delivery.timeout.ms"), "30000");
        props.put(StreamsConfig.producerPrefix("request.timeout.ms"), "10000");
        props.put("default.api.timeout.ms", "30000");
        props.put("retry.backoff.ms", "100");
        String user = null;
        String password = null;
        for (int i = 5; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq <= 0) {
                System.err.println("OrderTotals: not key=value: " + args[i]);
                System.exit(2);
            }
            String key = args[i].substring(0, eq);
            String value = args[i].substring(eq + 1);
            if (key.equals("sasl.username")) {
                user = value;
            } else if (key.equals("sasl.password")) {
                password = value;
            } else {
                props.put(key, value);
            }
        }
        if (user != null && password != null) {
            props.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required"
                    + " username=\"" + user + "\" password=\"" + password + "\";");
        }

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                .aggregate(
                        () -> 0L,
                        (customer, amount, total) -> total + Long.parseLong(amount.trim()),
                        Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("totals")
                                .withKeySerde(Serdes.String())
                                .withValueSerde(Serdes.Long()))
                .toStream()
                .mapValues(total -> Long.toString(total))
                .to(output, Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + now);
            System.out.flush();
            if (now == KafkaStreams.State.NOT_RUNNING || now == KafkaStreams.State.ERROR) {
                done.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(exc -> {
            System.out.println("THREAD-REPLACED " + exc);
            System.out.flush();
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(10));
            done.countDown();
        }));
        streams.start();
        done.await();
        streams.close(Duration.ofSeconds(10));
    }
}
