package eosmagics.jvm.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * The Java client (kafka-clients) driven line by line: one JSON command on stdin, one JSON answer on stdout.
 *
 * <p>A command is {@code {"op": ..., "name": ..., ...}}; the answer is {@code {"ok": true, ...}} or, when the
 * client threw, {@code {"ok": false, "error": SimpleClassName, "message": ..., "causes": [...]}} (the causes
 * chain, outermost first; an ExecutionException is unwrapped). An error is an answer: the JVM keeps serving.
 * Producers and consumers are named so one JVM holds several (a zombie and its successor, a group of two).
 * Keys and values are UTF-8 strings. Run by engine/conform/realtime_java_client.py.
 */
public final class Driver {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final Map<String, KafkaProducer<String, String>> producers = new HashMap<>();
    private final Map<String, KafkaConsumer<String, String>> consumers = new HashMap<>();
    private final Map<String, List<String>> rebalances = new HashMap<>();

    private Driver() {}

    public static void main(String[] args) throws Exception {
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        System.setOut(System.err); // anything the clients print stays off the answer channel
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Driver driver = new Driver();
        out.println("{\"ok\":true,\"ready\":true}");
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode answer;
            try {
                JsonNode command = JSON.readTree(line);
                answer = JSON.createObjectNode();
                answer.put("ok", true);
                if ("exit".equals(command.path("op").asText())) {
                    driver.closeAll();
                    out.println(JSON.writeValueAsString(answer));
                    return;
                }
                driver.handle(command, answer);
            } catch (Throwable t) {
                answer = error(t);
            }
            out.println(JSON.writeValueAsString(answer));
        }
        driver.closeAll();
    }

    static ObjectNode error(Throwable t) {
        Throwable e = t;
        while ((e instanceof ExecutionException || e instanceof java.util.concurrent.CompletionException)
                && e.getCause() != null) {
            e = e.getCause();
        }
        ObjectNode answer = JSON.createObjectNode();
        answer.put("ok", false);
        answer.put("error", e.getClass().getSimpleName());
        answer.put("message", String.valueOf(e.getMessage()));
        ArrayNode causes = answer.putArray("causes");
        for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
            causes.add(c.getClass().getSimpleName());
        }
        return answer;
    }

    private void handle(JsonNode c, ObjectNode a) throws Exception {
        String op = c.path("op").asText();
        String name = c.path("name").asText();
        switch (op) {
            case "producer":
                producers.put(name, new KafkaProducer<>(properties(c.path("config"), true)));
                break;
            case "consumer":
                consumers.put(name, new KafkaConsumer<>(properties(c.path("config"), false)));
                break;
            case "init":
                producer(name).initTransactions();
                break;
            case "begin":
                producer(name).beginTransaction();
                break;
            case "send": {
                String topic = c.path("topic").asText();
                Integer partition = c.hasNonNull("partition") ? c.get("partition").asInt() : null;
                String key = c.hasNonNull("key") ? c.get("key").asText() : null;
                String value = c.hasNonNull("value") ? c.get("value").asText() : null;
                Future<RecordMetadata> sent = producer(name).send(new ProducerRecord<>(topic, partition, key, value));
                if (c.path("wait").asBoolean(true)) {
                    RecordMetadata m = sent.get(c.path("timeout_ms").asLong(60_000), TimeUnit.MILLISECONDS);
                    a.put("partition", m.partition());
                    a.put("offset", m.offset());
                }
                break;
            }
            case "flush":
                producer(name).flush();
                break;
            case "commit_txn":
                producer(name).commitTransaction();
                break;
            case "abort_txn":
                producer(name).abortTransaction();
                break;
            case "send_offsets":
                producer(name).sendOffsetsToTransaction(
                        offsets(c.path("offsets")), consumer(c.path("consumer").asText()).groupMetadata());
                break;
            case "subscribe": {
                List<String> events = new ArrayList<>();
                rebalances.put(name, events);
                consumer(name).subscribe(strings(c.path("topics")), new ConsumerRebalanceListener() {
                    @Override
                    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                        events.add("revoked " + partitions);
                    }

                    @Override
                    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                        events.add("assigned " + partitions);
                    }
                });
                break;
            }
            case "assign":
                consumer(name).assign(partitions(c.path("partitions")));
                break;
            case "seek":
                for (JsonNode o : c.path("offsets")) {
                    consumer(name).seek(new TopicPartition(o.get(0).asText(), o.get(1).asInt()), o.get(2).asLong());
                }
                break;
            case "poll":
                poll(consumer(name), c, a);
                answerRebalances(name, a);
                break;
            case "assignment":
                a.set("partitions", partitionsJson(consumer(name).assignment()));
                answerRebalances(name, a);
                break;
            case "commit_sync":
                if (c.has("offsets")) {
                    consumer(name).commitSync(offsets(c.path("offsets")));
                } else {
                    consumer(name).commitSync();
                }
                break;
            case "committed": {
                Map<TopicPartition, OffsetAndMetadata> got = consumer(name).committed(new HashSet<>(partitions(c.path("partitions"))));
                a.set("offsets", offsetsJson(got));
                break;
            }
            case "end_offsets":
                a.set("offsets", longsJson(consumer(name).endOffsets(partitions(c.path("partitions")))));
                break;
            case "position": {
                ArrayNode rows = a.putArray("offsets");
                for (TopicPartition tp : partitions(c.path("partitions"))) {
                    rows.addArray().add(tp.topic()).add(tp.partition()).add(consumer(name).position(tp));
                }
                break;
            }
            case "close": {
                Duration timeout = Duration.ofMillis(c.path("timeout_ms").asLong(5_000));
                KafkaProducer<String, String> p = producers.remove(name);
                if (p != null) {
                    p.close(timeout);
                }
                KafkaConsumer<String, String> k = consumers.remove(name);
                if (k != null) {
                    k.close(timeout);
                }
                break;
            }
            case "ping":
                break;
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    private void poll(KafkaConsumer<String, String> consumer, JsonNode c, ObjectNode a) {
        long timeoutMs = c.path("timeout_ms").asLong(1_000);
        int atLeast = c.path("min").asInt(0);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        ArrayNode rows = a.putArray("records");
        do {
            long left = Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
            ConsumerRecords<String, String> got = consumer.poll(Duration.ofMillis(Math.min(left, 200)));
            for (ConsumerRecord<String, String> r : got) {
                ObjectNode row = rows.addObject();
                row.put("topic", r.topic());
                row.put("partition", r.partition());
                row.put("offset", r.offset());
                row.put("key", r.key());
                row.put("value", r.value());
            }
        } while (rows.size() < Math.max(atLeast, 1) && System.nanoTime() < deadline);
    }

    private void answerRebalances(String name, ObjectNode a) {
        List<String> events = rebalances.get(name);
        if (events != null) {
            ArrayNode rows = a.putArray("rebalances");
            events.forEach(rows::add);
            events.clear();
        }
    }

    private KafkaProducer<String, String> producer(String name) {
        KafkaProducer<String, String> p = producers.get(name);
        if (p == null) {
            throw new IllegalArgumentException("no producer named " + name);
        }
        return p;
    }

    private KafkaConsumer<String, String> consumer(String name) {
        KafkaConsumer<String, String> k = consumers.get(name);
        if (k == null) {
            throw new IllegalArgumentException("no consumer named " + name);
        }
        return k;
    }

    private static Properties properties(JsonNode config, boolean producer) {
        Properties props = new Properties();
        String ser = "org.apache.kafka.common.serialization.String" + (producer ? "Serializer" : "Deserializer");
        if (producer) {
            props.put("key.serializer", ser);
            props.put("value.serializer", ser);
        } else {
            props.put("key.deserializer", ser);
            props.put("value.deserializer", ser);
        }
        Iterator<Map.Entry<String, JsonNode>> fields = config.fields();
        while (fields.hasNext()) {
            Map.Entry<String, JsonNode> f = fields.next();
            props.put(f.getKey(), f.getValue().asText());
        }
        return props;
    }

    private static List<String> strings(JsonNode list) {
        List<String> out = new ArrayList<>();
        list.forEach(n -> out.add(n.asText()));
        return out;
    }

    private static List<TopicPartition> partitions(JsonNode list) {
        List<TopicPartition> out = new ArrayList<>();
        list.forEach(n -> out.add(new TopicPartition(n.get(0).asText(), n.get(1).asInt())));
        return out;
    }

    private static Map<TopicPartition, OffsetAndMetadata> offsets(JsonNode list) {
        Map<TopicPartition, OffsetAndMetadata> out = new LinkedHashMap<>();
        list.forEach(n -> out.put(new TopicPartition(n.get(0).asText(), n.get(1).asInt()),
                new OffsetAndMetadata(n.get(2).asLong())));
        return out;
    }

    private static ArrayNode partitionsJson(Set<TopicPartition> partitions) {
        ArrayNode rows = JSON.createArrayNode();
        partitions.stream()
                .sorted((x, y) -> x.topic().equals(y.topic()) ? x.partition() - y.partition()
                        : x.topic().compareTo(y.topic()))
                .forEach(tp -> rows.addArray().add(tp.topic()).add(tp.partition()));
        return rows;
    }

    private static ArrayNode offsetsJson(Map<TopicPartition, OffsetAndMetadata> got) {
        ArrayNode rows = JSON.createArrayNode();
        got.forEach((tp, o) -> rows.addArray().add(tp.topic()).add(tp.partition()).add(o == null ? -1 : o.offset()));
        return rows;
    }

    private static ArrayNode longsJson(Map<TopicPartition, Long> got) {
        ArrayNode rows = JSON.createArrayNode();
        got.forEach((tp, o) -> rows.addArray().add(tp.topic()).add(tp.partition()).add(o == null ? -1 : o));
        return rows;
    }

    private void closeAll() {
        Set<String> names = new HashSet<>(producers.keySet());
        names.addAll(consumers.keySet());
        for (String n : names) {
            try {
                KafkaProducer<String, String> p = producers.remove(n);
                if (p != null) {
                    p.close(Duration.ofSeconds(2));
                }
                KafkaConsumer<String, String> k = consumers.remove(n);
                if (k != null) {
                    k.close(Duration.ofSeconds(2));
                }
            } catch (RuntimeException ignored) {
                // closing at exit: nothing left to answer
            }
        }
    }
}
