/*
 * Test-only interop harness driving Java Paimon 0.9 (the shaded core inside pypaimon 0.2.0's
 * paimon-python-java-bridge-0.9.0.jar). Built and run by tests/interop/java_harness.py.
 *
 * Protocol: `java -cp ... PaimonHarness <command>`; the JSON payload is read from stdin, the JSON
 * result is written to stdout (nothing else is ever written to stdout: System.out is redirected to
 * stderr while a command runs). Exit code 0 = success, 1 = failure (stack trace on stderr),
 * 2 = usage error.
 *
 * Value conventions (both directions): INT/BIGINT/... JSON numbers; FLOAT/DOUBLE JSON numbers;
 * BOOLEAN JSON bool; STRING JSON string; DECIMAL string (plain, with the type's scale on output);
 * DATE "YYYY-MM-DD"; TIME "HH:MM:SS[.fff]"; TIMESTAMP/TIMESTAMP_LTZ "YYYY-MM-DD HH:MM:SS[.ffffff]"
 * (output: no fraction when zero, 6 digits when the value is whole microseconds, else 9);
 * BINARY/BYTES base64 string; ARRAY JSON list; MAP list of [key, value] pairs (a JSON object is
 * also accepted on input); ROW JSON list of field values; null is null.
 */

import org.apache.paimon.CoreOptions;
import org.apache.paimon.FileStore;
import org.apache.paimon.Snapshot;
import org.apache.paimon.append.UnawareAppendCompactionTask;
import org.apache.paimon.append.UnawareAppendTableCompactionCoordinator;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.metastore.MetastoreClient;
import org.apache.paimon.tag.TagTimeExpire;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericArray;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.deletionvectors.DeletionVector;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.fs.FileIO;
import org.apache.paimon.fs.Path;
import org.apache.paimon.index.HashBucketAssigner;
import org.apache.paimon.index.IndexFileHandler;
import org.apache.paimon.index.IndexFileMeta;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.io.DataFilePathFactory;
import org.apache.paimon.manifest.FileKind;
import org.apache.paimon.manifest.ManifestCommittable;
import org.apache.paimon.manifest.IndexManifestEntry;
import org.apache.paimon.manifest.ManifestEntry;
import org.apache.paimon.manifest.ManifestFile;
import org.apache.paimon.manifest.ManifestFileMeta;
import org.apache.paimon.manifest.ManifestList;
import org.apache.paimon.operation.AppendOnlyFileStoreWrite;
import org.apache.paimon.operation.FileStoreScan;
import org.apache.paimon.operation.OrphanFilesClean;
import org.apache.paimon.operation.PartitionExpire;
import org.apache.paimon.partition.PartitionExpireStrategy;
import org.apache.paimon.partition.PartitionTimeExtractor;
import org.apache.paimon.partition.actions.PartitionMarkDoneAction;
import org.apache.paimon.partition.file.SuccessFile;
import org.apache.paimon.options.ExpireConfig;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaManager;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.JsonNodeFactory;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.table.BucketMode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.FileStoreTableFactory;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.RowKeyExtractor;
import org.apache.paimon.table.sink.SinkRecord;
import org.apache.paimon.table.sink.TableCommitImpl;
import org.apache.paimon.table.sink.TableWriteImpl;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.system.AuditLogTable;
import org.apache.paimon.table.source.TableScan;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.MultisetType;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;
import org.apache.paimon.utils.FileStorePathFactory;
import org.apache.paimon.utils.Pair;
import org.apache.paimon.utils.PartitionPathUtils;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;

public class PaimonHarness {

    static final ObjectMapper MAPPER = new ObjectMapper();
    static final JsonNodeFactory NF = JsonNodeFactory.instance;

    public static void main(String[] args) {
        PrintStream realOut = System.out;
        if (args.length != 1) {
            System.err.println("usage: PaimonHarness <command>  (JSON payload on stdin)");
            System.exit(2);
        }
        // Keep stdout clean for the JSON answer: library noise printed to System.out goes to stderr.
        System.setOut(System.err);
        if (args[0].equals("--serve")) {
            System.exit(serve(realOut));
        }
        int rc = 0;
        try {
            InputStream in = System.in;
            String text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            JsonNode payload = text.trim().isEmpty() ? NF.objectNode() : MAPPER.readTree(text);
            JsonNode result = dispatch(args[0], payload);
            realOut.write(MAPPER.writeValueAsBytes(result));
            realOut.write('\n');
            realOut.flush();
        } catch (Throwable t) {
            System.err.println("PaimonHarness: command '" + args[0] + "' failed:");
            t.printStackTrace(System.err);
            System.err.flush();
            rc = 1;
        }
        // Paimon keeps non-daemon executor threads around; exit explicitly.
        System.exit(rc);
    }

    /**
     * One JVM for many commands (the tests' harness server): each stdin line is {"command", "payload"}, each answer
     * one stdout line, {"result": ...} or {"error": "<what failed, with the stack trace>"}. A command runs exactly
     * as in a one-shot JVM (the same dispatch, a catalog of its own); ends at the end of stdin.
     */
    static int serve(PrintStream out) {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = readLine(in)) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode answer = NF.objectNode();
            String command = "?";
            try {
                JsonNode request = MAPPER.readTree(line);
                command = request.get("command").asText();
                JsonNode payload = request.path("payload");
                answer.set("result", dispatch(command, payload.isObject() ? payload : NF.objectNode()));
            } catch (Throwable t) {
                StringWriter trace = new StringWriter();
                t.printStackTrace(new PrintWriter(trace));
                answer.put("error", "PaimonHarness: command '" + command + "' failed:\n" + trace);
            }
            try {
                out.write(MAPPER.writeValueAsBytes(answer));
            } catch (Exception e) {
                out.print("{\"error\": \"PaimonHarness: an answer that cannot be written as JSON\"}");
            }
            out.write('\n');
            out.flush();
        }
        return 0;
    }

    static String readLine(BufferedReader in) {
        try {
            return in.readLine();
        } catch (java.io.IOException e) {
            return null;
        }
    }

    static JsonNode dispatch(String command, JsonNode p) throws Exception {
        switch (command) {
            case "ping":
                return NF.objectNode().put("ok", true).put("paimon_version", paimonVersion());
            case "multi":
                {
                    // {"commands": [{"command": ..., "payload": {...}}, ...]} -> list of results
                    ArrayNode out = NF.arrayNode();
                    for (JsonNode c : p.get("commands")) {
                        out.add(dispatch(c.get("command").asText(), c.path("payload")));
                    }
                    return out;
                }
            case "create_table":
                return createTable(p);
            case "write":
                return write(p);
            case "scan":
                return scan(p);
            case "read":
                return read(p);
            case "snapshots":
                return snapshots(p);
            case "create_tag":
                return createTag(p);
            case "delete_tag":
                return deleteTag(p);
            case "expire_snapshots":
                return expireSnapshots(p);
            case "expire_changelogs":
                return expireChangelogs(p);
            case "compact":
                return compact(p);
            case "audit_log":
                return auditLog(p);
            case "check_files":
                return checkFiles(p);
            case "remove_orphans":
                return removeOrphans(p);
            case "expire_partitions":
                return expirePartitions(p);
            case "partition_times":
                return partitionTimes(p);
            case "create_branch":
                return createBranch(p);
            case "delete_branch":
                return deleteBranch(p);
            case "fast_forward":
                return fastForward(p);
            case "branches":
                return branches(p);
            case "consumers":
                return consumers(p);
            case "reset_consumer":
                return resetConsumer(p);
            case "expire_tags":
                return expireTags(p);
            case "create_tag_from":
                return createTagFrom(p);
            case "rollback":
                {
                    // {snapshot_id? | tag?} -> {latest}: 0.9's rollbackTo (RollbackHelper: newer snapshots, tags,
                    // changelogs and their files removed)
                    FileStoreTable t = table(p);
                    if (p.hasNonNull("tag")) {
                        t.rollbackTo(p.get("tag").asText());
                    } else {
                        t.rollbackTo(p.get("snapshot_id").asLong());
                    }
                    return NF.objectNode().put("latest", t.snapshotManager().latestSnapshotId());
                }
            case "mark_partition_done":
                return markPartitionDone(p);
            case "success_file":
                {
                    // {path} -> {creationTime, modificationTime}: 0.9's own SuccessFile reader
                    Path path = new Path(p.get("path").asText());
                    SuccessFile f = SuccessFile.fromPath(FileIO.get(path, CatalogContext.create(new Options())), path);
                    return NF.objectNode().put("creationTime", f.creationTime())
                            .put("modificationTime", f.modificationTime());
                }
            case "file_index":
                return fileIndex(p);
            case "delete_positions":
                return deletePositions(p);
            case "list_tables":
                {
                    // {warehouse, catalog_options, database} -> {tables: [...], locations: {name: path}}
                    Catalog c = catalog(p);
                    String db = p.get("database").asText();
                    ArrayNode names = NF.arrayNode();
                    ObjectNode locations = NF.objectNode();
                    for (String name : c.listTables(db)) {
                        names.add(name);
                        locations.put(name, ((FileStoreTable) c.getTable(Identifier.create(db, name)))
                                .location().toString());
                    }
                    return NF.objectNode().<ObjectNode>set("tables", names).set("locations", locations);
                }
            default:
                throw new IllegalArgumentException("unknown command: " + command);
        }
    }

    static String paimonVersion() {
        Package pkg = FileStoreTable.class.getPackage();
        String v = pkg == null ? null : pkg.getImplementationVersion();
        return v == null ? "0.9" : v;
    }

    // ------------------------------------------------------------------ table access

    static Catalog catalog(JsonNode p) {
        Options o = new Options();
        o.set("warehouse", p.get("warehouse").asText());
        o.set("cache-enabled", "false");
        for (Map.Entry<String, String> e : stringMap(p.get("catalog_options")).entrySet()) {
            o.set(e.getKey(), e.getValue()); // metastore, uri, lock.enabled, ... (a Hive / JDBC catalog)
        }
        return CatalogFactory.createCatalog(CatalogContext.create(o));
    }

    static Map<String, String> stringMap(JsonNode n) {
        Map<String, String> m = new LinkedHashMap<>();
        if (n != null && n.isObject()) {
            Iterator<Map.Entry<String, JsonNode>> it = n.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                m.put(e.getKey(), e.getValue().isTextual() ? e.getValue().asText() : e.getValue().toString());
            }
        }
        return m;
    }

    /** Loads the table either from {warehouse, database, table} or from {table_path}. */
    static FileStoreTable table(JsonNode p) throws Exception {
        FileStoreTable t;
        if (p.hasNonNull("table_path")) {
            Path path = new Path(p.get("table_path").asText());
            FileIO io = FileIO.get(path, CatalogContext.create(new Options()));
            t = FileStoreTableFactory.create(io, path);
        } else {
            Catalog c = catalog(p);
            t = (FileStoreTable) c.getTable(
                    Identifier.create(p.get("database").asText(), p.get("table").asText()));
        }
        Map<String, String> dyn = stringMap(p.get("dynamic_options"));
        if (!dyn.isEmpty()) {
            t = t.copy(dyn);
        }
        return t;
    }

    static Snapshot resolveSnapshot(FileStoreTable t, JsonNode p) {
        if (p.hasNonNull("tag")) {
            return t.tagManager().taggedSnapshot(p.get("tag").asText());
        }
        if (p.hasNonNull("snapshot_id")) {
            return t.snapshotManager().snapshot(p.get("snapshot_id").asLong());
        }
        return t.snapshotManager().latestSnapshot();
    }

    // ------------------------------------------------------------------ create_table

    /** Type from JSON: a Paimon schema-JSON type node, or a SQL-ish string (composites handled here). */
    static DataType parseType(JsonNode n) {
        if (n.isObject()) {
            return DataTypeJsonParser.parseDataType(n);
        }
        return parseType(n.asText());
    }

    static DataType parseType(String s) {
        s = s.trim();
        boolean nullable = true;
        String upper = s.toUpperCase();
        // trailing NOT NULL / NULL at top level
        if (upper.endsWith("NOT NULL") && depthAt(s, s.length() - 8) == 0) {
            nullable = false;
            s = s.substring(0, s.length() - 8).trim();
        } else if (upper.endsWith(" NULL") && depthAt(s, s.length() - 5) == 0) {
            s = s.substring(0, s.length() - 5).trim();
        }
        upper = s.toUpperCase();
        int lt = s.indexOf('<');
        if (lt > 0 && s.endsWith(">")) {
            String kw = upper.substring(0, lt).trim();
            String inner = s.substring(lt + 1, s.length() - 1);
            List<String> parts = splitTopLevel(inner);
            switch (kw) {
                case "ARRAY":
                    return new ArrayType(nullable, parseType(parts.get(0)));
                case "MULTISET":
                    return new MultisetType(nullable, parseType(parts.get(0)));
                case "MAP":
                    return new MapType(nullable, parseType(parts.get(0)), parseType(parts.get(1)));
                case "ROW":
                    {
                        List<DataField> fields = new ArrayList<>();
                        int id = 0;
                        for (String part : parts) {
                            part = part.trim();
                            String name;
                            String rest;
                            if (part.startsWith("`")) {
                                int end = part.indexOf('`', 1);
                                name = part.substring(1, end);
                                rest = part.substring(end + 1).trim();
                            } else {
                                int sp = part.indexOf(' ');
                                name = part.substring(0, sp);
                                rest = part.substring(sp + 1).trim();
                            }
                            String comment = null;
                            int ci = rest.toUpperCase().lastIndexOf(" COMMENT '");
                            if (ci >= 0 && depthAt(rest, ci) == 0 && rest.endsWith("'")) {
                                comment = rest.substring(ci + 10, rest.length() - 1).replace("''", "'");
                                rest = rest.substring(0, ci).trim();
                            }
                            fields.add(new DataField(id++, name, parseType(rest), comment));
                        }
                        return new RowType(nullable, fields);
                    }
                default:
                    break;
            }
        }
        DataType t = DataTypeJsonParser.parseAtomicTypeSQLString(s);
        return t.copy(nullable && t.isNullable());
    }

    static int depthAt(String s, int pos) {
        int depth = 0;
        for (int i = 0; i < pos && i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '<' || c == '(') {
                depth++;
            } else if (c == '>' || c == ')') {
                depth--;
            }
        }
        return depth;
    }

    static List<String> splitTopLevel(String s) {
        List<String> out = new ArrayList<>();
        int depth = 0;
        boolean quoted = false;
        int start = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\'' ) {
                quoted = !quoted;
            } else if (!quoted && (c == '<' || c == '(')) {
                depth++;
            } else if (!quoted && (c == '>' || c == ')')) {
                depth--;
            } else if (!quoted && c == ',' && depth == 0) {
                out.add(s.substring(start, i).trim());
                start = i + 1;
            }
        }
        out.add(s.substring(start).trim());
        return out;
    }

    static JsonNode createTable(JsonNode p) throws Exception {
        JsonNode s = p.get("schema");
        Schema.Builder b = Schema.newBuilder();
        for (JsonNode f : s.get("fields")) {
            DataType type = parseType(f.get("type"));
            if (f.hasNonNull("comment")) {
                b.column(f.get("name").asText(), type, f.get("comment").asText());
            } else {
                b.column(f.get("name").asText(), type);
            }
        }
        List<String> pks = textList(s.get("primary_keys"));
        List<String> parts = textList(s.get("partition_keys"));
        if (!parts.isEmpty()) {
            b.partitionKeys(parts);
        }
        if (!pks.isEmpty()) {
            b.primaryKey(pks);
        }
        b.options(stringMap(s.get("options")));
        if (s.hasNonNull("comment")) {
            b.comment(s.get("comment").asText());
        }
        Schema schema = b.build();
        String location;
        if (p.hasNonNull("table_path")) {
            Path path = new Path(p.get("table_path").asText());
            FileIO io = FileIO.get(path, CatalogContext.create(new Options()));
            new SchemaManager(io, path).createTable(schema);
            location = path.toString();
        } else {
            Catalog c = catalog(p);
            String db = p.get("database").asText();
            c.createDatabase(db, true);
            Identifier id = Identifier.create(db, p.get("table").asText());
            c.createTable(id, schema, p.path("ignore_if_exists").asBoolean(false));
            location = c.getTableLocation(id).toString();
        }
        FileStoreTable t = table(p);
        return NF.objectNode()
                .put("table_path", location)
                .put("schema_id", t.schema().id())
                .put("bucket_mode", t.bucketMode().name());
    }

    static List<String> textList(JsonNode n) {
        List<String> out = new ArrayList<>();
        if (n != null && n.isArray()) {
            for (JsonNode x : n) {
                out.add(x.asText());
            }
        }
        return out;
    }

    // ------------------------------------------------------------------ value conversion

    static Object toInternal(DataType type, JsonNode v) {
        if (v == null || v.isNull()) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return v.isTextual() ? Boolean.parseBoolean(v.asText()) : v.asBoolean();
            case TINYINT:
                return (byte) v.asInt();
            case SMALLINT:
                return (short) v.asInt();
            case INTEGER:
                return v.isTextual() ? Integer.parseInt(v.asText()) : v.asInt();
            case BIGINT:
                return v.isTextual() ? Long.parseLong(v.asText()) : v.asLong();
            case FLOAT:
                return v.isTextual() ? Float.parseFloat(v.asText()) : (float) v.asDouble();
            case DOUBLE:
                return v.isTextual() ? Double.parseDouble(v.asText()) : v.asDouble();
            case CHAR:
            case VARCHAR:
                return BinaryString.fromString(v.isTextual() ? v.asText() : v.toString());
            case BINARY:
            case VARBINARY:
                return Base64.getDecoder().decode(v.asText());
            case DECIMAL:
                {
                    DecimalType dt = (DecimalType) type;
                    BigDecimal bd = v.isTextual() ? new BigDecimal(v.asText()) : v.decimalValue();
                    Decimal d = Decimal.fromBigDecimal(bd, dt.getPrecision(), dt.getScale());
                    if (d == null) {
                        throw new IllegalArgumentException("decimal " + bd + " does not fit " + type);
                    }
                    return d;
                }
            case DATE:
                return v.isNumber() ? v.asInt() : (int) LocalDate.parse(v.asText()).toEpochDay();
            case TIME_WITHOUT_TIME_ZONE:
                return v.isNumber()
                        ? v.asInt()
                        : (int) (LocalTime.parse(v.asText()).toNanoOfDay() / 1_000_000L);
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                if (v.isNumber()) {
                    return Timestamp.fromEpochMillis(v.asLong());
                }
                return Timestamp.fromLocalDateTime(LocalDateTime.parse(v.asText().trim().replace(' ', 'T')));
            case ARRAY:
                {
                    DataType et = ((ArrayType) type).getElementType();
                    Object[] arr = new Object[v.size()];
                    for (int i = 0; i < v.size(); i++) {
                        arr[i] = toInternal(et, v.get(i));
                    }
                    return new GenericArray(arr);
                }
            case MAP:
            case MULTISET:
                {
                    DataType kt;
                    DataType vt;
                    if (type instanceof MapType) {
                        kt = ((MapType) type).getKeyType();
                        vt = ((MapType) type).getValueType();
                    } else {
                        kt = ((MultisetType) type).getElementType();
                        vt = new org.apache.paimon.types.IntType(false);
                    }
                    Map<Object, Object> m = new LinkedHashMap<>();
                    if (v.isObject()) {
                        Iterator<Map.Entry<String, JsonNode>> it = v.fields();
                        while (it.hasNext()) {
                            Map.Entry<String, JsonNode> e = it.next();
                            m.put(toInternal(kt, NF.textNode(e.getKey())), toInternal(vt, e.getValue()));
                        }
                    } else {
                        for (JsonNode pair : v) {
                            m.put(toInternal(kt, pair.get(0)), toInternal(vt, pair.get(1)));
                        }
                    }
                    return new GenericMap(m);
                }
            case ROW:
                {
                    RowType rt = (RowType) type;
                    GenericRow r = new GenericRow(rt.getFieldCount());
                    for (int i = 0; i < rt.getFieldCount(); i++) {
                        JsonNode x = v.isObject() ? v.get(rt.getFields().get(i).name()) : v.get(i);
                        r.setField(i, toInternal(rt.getTypeAt(i), x));
                    }
                    return r;
                }
            default:
                throw new UnsupportedOperationException("unsupported type for write: " + type);
        }
    }

    static String renderTimestamp(LocalDateTime ldt) {
        String base = String.format(
                "%04d-%02d-%02d %02d:%02d:%02d",
                ldt.getYear(), ldt.getMonthValue(), ldt.getDayOfMonth(),
                ldt.getHour(), ldt.getMinute(), ldt.getSecond());
        int nanos = ldt.getNano();
        if (nanos == 0) {
            return base;
        }
        if (nanos % 1000 == 0) {
            return base + String.format(".%06d", nanos / 1000);
        }
        return base + String.format(".%09d", nanos);
    }

    static JsonNode toJson(DataType type, Object o) {
        if (o == null) {
            return NF.nullNode();
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return NF.booleanNode((Boolean) o);
            case TINYINT:
                return NF.numberNode((int) (Byte) o);
            case SMALLINT:
                return NF.numberNode((int) (Short) o);
            case INTEGER:
                return NF.numberNode((Integer) o);
            case BIGINT:
                return NF.numberNode((Long) o);
            case FLOAT:
                return NF.numberNode((double) (Float) o);
            case DOUBLE:
                return NF.numberNode((Double) o);
            case CHAR:
            case VARCHAR:
                return NF.textNode(o.toString());
            case BINARY:
            case VARBINARY:
                return NF.textNode(Base64.getEncoder().encodeToString((byte[]) o));
            case DECIMAL:
                return NF.textNode(((Decimal) o).toBigDecimal().toPlainString());
            case DATE:
                return NF.textNode(LocalDate.ofEpochDay((Integer) o).toString());
            case TIME_WITHOUT_TIME_ZONE:
                return NF.textNode(LocalTime.ofNanoOfDay(((Integer) o) * 1_000_000L).toString());
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return NF.textNode(renderTimestamp(((Timestamp) o).toLocalDateTime()));
            case ARRAY:
                {
                    DataType et = ((ArrayType) type).getElementType();
                    InternalArray a = (InternalArray) o;
                    InternalArray.ElementGetter g = InternalArray.createElementGetter(et);
                    ArrayNode out = NF.arrayNode();
                    for (int i = 0; i < a.size(); i++) {
                        out.add(toJson(et, g.getElementOrNull(a, i)));
                    }
                    return out;
                }
            case MAP:
            case MULTISET:
                {
                    DataType kt;
                    DataType vt;
                    if (type instanceof MapType) {
                        kt = ((MapType) type).getKeyType();
                        vt = ((MapType) type).getValueType();
                    } else {
                        kt = ((MultisetType) type).getElementType();
                        vt = new org.apache.paimon.types.IntType(false);
                    }
                    InternalMap m = (InternalMap) o;
                    InternalArray ks = m.keyArray();
                    InternalArray vs = m.valueArray();
                    InternalArray.ElementGetter kg = InternalArray.createElementGetter(kt);
                    InternalArray.ElementGetter vg = InternalArray.createElementGetter(vt);
                    ArrayNode out = NF.arrayNode();
                    for (int i = 0; i < m.size(); i++) {
                        ArrayNode pair = NF.arrayNode();
                        pair.add(toJson(kt, kg.getElementOrNull(ks, i)));
                        pair.add(toJson(vt, vg.getElementOrNull(vs, i)));
                        out.add(pair);
                    }
                    return out;
                }
            case ROW:
                return rowToJson((RowType) type, (InternalRow) o);
            default:
                return NF.textNode(o.toString());
        }
    }

    static ArrayNode rowToJson(RowType rt, InternalRow row) {
        ArrayNode out = NF.arrayNode();
        for (int i = 0; i < rt.getFieldCount(); i++) {
            Object v = InternalRow.createFieldGetter(rt.getTypeAt(i), i).getFieldOrNull(row);
            out.add(toJson(rt.getTypeAt(i), v));
        }
        return out;
    }

    static RowKind parseKind(String s) {
        switch (s.trim().toUpperCase()) {
            case "+I":
            case "INSERT":
                return RowKind.INSERT;
            case "-U":
            case "UPDATE_BEFORE":
                return RowKind.UPDATE_BEFORE;
            case "+U":
            case "UPDATE_AFTER":
                return RowKind.UPDATE_AFTER;
            case "-D":
            case "DELETE":
                return RowKind.DELETE;
            default:
                throw new IllegalArgumentException("unknown row kind: " + s);
        }
    }

    static GenericRow toRow(RowType rt, JsonNode values, RowKind kind) {
        if (values.size() != rt.getFieldCount()) {
            throw new IllegalArgumentException(
                    "row has " + values.size() + " values, table has " + rt.getFieldCount() + " columns: " + values);
        }
        GenericRow r = new GenericRow(kind, rt.getFieldCount());
        for (int i = 0; i < rt.getFieldCount(); i++) {
            r.setField(i, toInternal(rt.getTypeAt(i), values.get(i)));
        }
        return r;
    }

    // ------------------------------------------------------------------ write

    static final class Writer implements AutoCloseable {
        final FileStoreTable table;
        final String commitUser;
        final TableWriteImpl<?> write;
        final TableCommitImpl commit;
        final HashBucketAssigner assigner;
        final RowKeyExtractor extractor;
        final IOManager ioManager;

        Writer(FileStoreTable table, String commitUser) {
            this.table = table;
            this.commitUser = commitUser;
            this.write = table.newWrite(commitUser);
            // lookup compaction (DV tables, first-row, changelog-producer=lookup) needs a spill dir
            this.ioManager = IOManager.create(tmpDir());
            this.write.withIOManager(ioManager);
            this.commit = table.newCommit(commitUser);
            if (table.bucketMode() == BucketMode.HASH_DYNAMIC) {
                this.assigner = new HashBucketAssigner(
                        table.snapshotManager(), commitUser, table.store().newIndexFileHandler(),
                        1, 1, 0, table.coreOptions().dynamicBucketTargetRowNum());
                this.extractor = table.createRowKeyExtractor();
            } else if (table.bucketMode() == BucketMode.CROSS_PARTITION) {
                throw new UnsupportedOperationException(
                        "cross-partition (global index) dynamic bucket tables are not supported by the harness");
            } else {
                this.assigner = null;
                this.extractor = null;
            }
        }

        SinkRecord write(InternalRow row) throws Exception {
            if (assigner != null) {
                extractor.setRecord(row);
                int bucket = assigner.assign(extractor.partition(), extractor.trimmedPrimaryKey().hashCode());
                return write.writeAndReturn(row, bucket);
            }
            return write.writeAndReturn(row);
        }

        List<CommitMessage> prepare(boolean waitCompaction, long identifier) throws Exception {
            List<CommitMessage> msgs = write.prepareCommit(waitCompaction, identifier);
            if (assigner != null) {
                assigner.prepareCommit(identifier);
            }
            return msgs;
        }

        @Override
        public void close() throws Exception {
            try {
                write.close();
                commit.close();
            } finally {
                ioManager.close();
            }
        }
    }

    static String tmpDir() {
        String d = System.getProperty("paimon.harness.tmpdir");
        if (d == null || d.isEmpty()) {
            d = System.getProperty("java.io.tmpdir");
        }
        return d;
    }

    static long latestId(FileStoreTable t) {
        Long latest = t.snapshotManager().latestSnapshotId();
        return latest == null ? 0 : latest;
    }

    static ArrayNode newSnapshotIds(FileStoreTable t, long before) {
        ArrayNode out = NF.arrayNode();
        Long latest = t.snapshotManager().latestSnapshotId();
        if (latest != null) {
            for (long id = before + 1; id <= latest; id++) {
                out.add(id);
            }
        }
        return out;
    }

    static JsonNode write(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        RowType rt = t.rowType();
        String user = p.hasNonNull("commit_user") ? p.get("commit_user").asText() : UUID.randomUUID().toString();
        ArrayNode batchesOut = NF.arrayNode();
        long nextIdentifier = p.path("first_commit_identifier").asLong(1);
        try (Writer w = new Writer(t, user)) {
            for (JsonNode batch : p.get("batches")) {
                long before = latestId(t);
                JsonNode rows = batch.path("rows");
                JsonNode kinds = batch.get("kinds");
                Set<Pair<BinaryRow, Integer>> touched = new LinkedHashSet<>();
                for (int i = 0; i < rows.size(); i++) {
                    RowKind kind = kinds == null || kinds.isNull() ? RowKind.INSERT : parseKind(kinds.get(i).asText());
                    SinkRecord rec = w.write(toRow(rt, rows.get(i), kind));
                    touched.add(Pair.of(rec.partition().copy(), rec.bucket()));
                }
                if (batch.path("compact").asBoolean(false)) {
                    boolean full = batch.path("full").asBoolean(true);
                    if (t.bucketMode() == BucketMode.BUCKET_UNAWARE) {
                        throw new UnsupportedOperationException(
                                "compact in write is not supported for bucket=-1 append tables; use the compact command");
                    }
                    for (Pair<BinaryRow, Integer> pb : touched) {
                        w.write.compact(pb.getLeft(), pb.getRight(), full);
                    }
                }
                long identifier = batch.hasNonNull("commit_identifier")
                        ? batch.get("commit_identifier").asLong()
                        : nextIdentifier;
                nextIdentifier = identifier + 1;
                boolean wait = batch.path("wait_compaction").asBoolean(true);
                List<CommitMessage> msgs = w.prepare(wait, identifier);
                if (batch.hasNonNull("watermark")) {
                    // a streaming commit carrying the writer's watermark (Flink's committable)
                    ManifestCommittable committable =
                            new ManifestCommittable(identifier, batch.get("watermark").asLong());
                    msgs.forEach(committable::addFileCommittable);
                    w.commit.commit(committable);
                } else {
                    w.commit.commit(identifier, msgs);
                }
                ObjectNode bo = NF.objectNode();
                bo.put("commit_identifier", identifier);
                bo.set("snapshot_ids", newSnapshotIds(t, before));
                batchesOut.add(bo);
            }
        }
        ObjectNode out = NF.objectNode();
        out.put("commit_user", user);
        out.set("batches", batchesOut);
        Long latest = t.snapshotManager().latestSnapshotId();
        if (latest == null) {
            out.putNull("latest_snapshot_id");
        } else {
            out.put("latest_snapshot_id", latest);
        }
        return out;
    }

    // ------------------------------------------------------------------ compact

    static boolean partitionMatches(FileStoreTable t, BinaryRow partition, JsonNode specs) {
        if (specs == null || specs.isNull()) {
            return true;
        }
        RowType pt = t.schema().logicalPartitionType();
        ArrayNode rendered = rowToJson(pt, partition);
        for (JsonNode spec : specs) {
            boolean all = true;
            for (int i = 0; i < pt.getFieldCount(); i++) {
                String name = pt.getFields().get(i).name();
                if (!spec.has(name)) {
                    continue;
                }
                JsonNode want = spec.get(name);
                JsonNode have = rendered.get(i);
                String wantS = want.isTextual() ? want.asText() : want.toString();
                String haveS = have.isTextual() ? have.asText() : have.toString();
                if (!wantS.equals(haveS)) {
                    all = false;
                    break;
                }
            }
            if (all) {
                return true;
            }
        }
        return false;
    }

    static JsonNode compact(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        Map<String, String> dyn = new HashMap<>();
        dyn.put("write-only", "false");
        t = t.copy(dyn);
        String user = p.hasNonNull("commit_user") ? p.get("commit_user").asText() : UUID.randomUUID().toString();
        boolean full = p.path("full").asBoolean(true);
        long identifier = p.path("commit_identifier").asLong(Long.MAX_VALUE);
        JsonNode partitions = p.get("partitions");
        long before = latestId(t);
        long started = System.nanoTime();
        int units = 0;
        if (t.bucketMode() == BucketMode.BUCKET_UNAWARE) {
            List<UnawareAppendCompactionTask> tasks = new ArrayList<>();
            if (full) {
                // The coordinator only packs files once they reach target-file-size (or after several
                // streaming rounds); a "full" compaction rewrites every partition's files into one task.
                Snapshot latest = t.snapshotManager().latestSnapshot();
                Map<BinaryRow, List<DataFileMeta>> byPartition = new LinkedHashMap<>();
                if (latest != null) {
                    for (ManifestEntry e : t.store().newScan().withSnapshot(latest).plan().files()) {
                        byPartition.computeIfAbsent(e.partition(), k -> new ArrayList<>()).add(e.file());
                    }
                }
                for (Map.Entry<BinaryRow, List<DataFileMeta>> e : byPartition.entrySet()) {
                    if (e.getValue().size() > 1) {
                        tasks.add(new UnawareAppendCompactionTask(e.getKey(), e.getValue()));
                    }
                }
            } else {
                tasks.addAll(new UnawareAppendTableCompactionCoordinator(t, false).run());
            }
            AppendOnlyFileStoreWrite write = (AppendOnlyFileStoreWrite) t.store().newWrite(user);
            List<CommitMessage> msgs = new ArrayList<>();
            for (UnawareAppendCompactionTask task : tasks) {
                if (!partitionMatches(t, task.partition(), partitions)) {
                    continue;
                }
                msgs.add(task.doCompact(t, write));
                units++;
            }
            write.close();
            if (!msgs.isEmpty()) {
                try (TableCommitImpl commit = t.newCommit(user)) {
                    commit.commit(identifier, msgs);
                }
            }
        } else {
            Snapshot latest = t.snapshotManager().latestSnapshot();
            Set<Pair<BinaryRow, Integer>> buckets = new LinkedHashSet<>();
            if (latest != null) {
                for (ManifestEntry e : t.store().newScan().withSnapshot(latest).plan().files()) {
                    if (partitionMatches(t, e.partition(), partitions)) {
                        buckets.add(Pair.of(e.partition(), e.bucket()));
                    }
                }
            }
            try (Writer w = new Writer(t, user)) {
                for (Pair<BinaryRow, Integer> pb : buckets) {
                    w.write.compact(pb.getLeft(), pb.getRight(), full);
                    units++;
                }
                List<CommitMessage> msgs = w.prepare(true, identifier);
                w.commit.commit(identifier, msgs);
            }
        }
        ObjectNode out = NF.objectNode();
        out.put("compacted_units", units);
        out.put("elapsed_ms", (System.nanoTime() - started) / 1_000_000);
        out.set("snapshot_ids", newSnapshotIds(t, before));
        return out;
    }

    // ------------------------------------------------------------------ audit_log

    /**
     * The changelog a streaming consumer sees between two snapshots: the $audit_log system table read with
     * incremental-between=<start>,<end> (start exclusive) and incremental-between-scan-mode (default changelog).
     * Rows come back with the row kind as their first value ("+I", "-U", "+U", "-D").
     */
    static JsonNode auditLog(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        long latest = latestId(t);
        long start = p.get("start").asLong();
        long end = p.hasNonNull("end") ? p.get("end").asLong() : latest;
        if (start < 0) {
            start = latest + start; // relative to the latest snapshot
        }
        Map<String, String> dyn = new HashMap<>();
        dyn.put(CoreOptions.INCREMENTAL_BETWEEN.key(), start + "," + end);
        dyn.put(CoreOptions.INCREMENTAL_BETWEEN_SCAN_MODE.key(), p.path("scan_mode").asText("changelog"));
        AuditLogTable audit = new AuditLogTable(t.copy(dyn));
        ReadBuilder rb = audit.newReadBuilder();
        RowType rt = audit.rowType();
        TableScan.Plan plan = rb.newScan().plan();
        ArrayNode rows = NF.arrayNode();
        try (RecordReader<InternalRow> reader = rb.newRead().createReader(plan)) {
            reader.forEachRemaining(row -> rows.add(rowToJson(rt, row)));
        }
        ObjectNode out = NF.objectNode();
        out.set("rows", rows);
        out.put("start", start);
        out.put("end", end);
        ArrayNode cols = NF.arrayNode();
        for (String n : rt.getFieldNames()) {
            cols.add(n);
        }
        out.set("columns", cols);
        return out;
    }

    // ------------------------------------------------------------------ scan

    static String partitionPath(FileStorePathFactory pf, BinaryRow partition) {
        String s = pf.getPartitionString(partition);
        while (s.endsWith("/")) {
            s = s.substring(0, s.length() - 1);
        }
        return s;
    }

    static JsonNode scan(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        Snapshot snap = resolveSnapshot(t, p);
        ObjectNode out = NF.objectNode();
        ArrayNode files = NF.arrayNode();
        ArrayNode indexFiles = NF.arrayNode();
        out.set("files", files);
        out.set("index_files", indexFiles);
        if (snap == null) {
            out.putNull("snapshot_id");
            return out;
        }
        out.put("snapshot_id", snap.id());
        out.put("schema_id", snap.schemaId());
        out.put("commit_kind", snap.commitKind().name());
        FileStore<?> store = t.store();
        FileStorePathFactory pf = store.pathFactory();
        RowType partType = t.schema().logicalPartitionType();
        RowType keyType = t.primaryKeys().isEmpty() ? null : t.schema().logicalTrimmedPrimaryKeysType();
        boolean withPositions = p.path("dv_positions").asBoolean(true);

        FileStoreScan.Plan plan = store.newScan().withSnapshot(snap).plan();
        Map<String, Long> rowCounts = new HashMap<>();
        for (ManifestEntry e : plan.files()) {
            DataFileMeta f = e.file();
            ObjectNode o = NF.objectNode();
            o.set("partition", rowToJson(partType, e.partition()));
            String pp = partitionPath(pf, e.partition());
            o.put("partition_path", pp);
            o.put("bucket", e.bucket());
            o.put("level", f.level());
            o.put("file_name", f.fileName());
            o.put("file_path", (pp.isEmpty() ? "" : pp + "/") + "bucket-" + e.bucket() + "/" + f.fileName());
            o.put("row_count", f.rowCount());
            o.put("file_size", f.fileSize());
            o.put("min_seq", f.minSequenceNumber());
            o.put("max_seq", f.maxSequenceNumber());
            if (f.deleteRowCount().isPresent()) {
                o.put("delete_row_count", f.deleteRowCount().get());
            } else {
                o.putNull("delete_row_count");
            }
            o.put("schema_id", f.schemaId());
            o.put("total_buckets", e.totalBuckets());
            if (f.fileSource().isPresent()) {
                o.put("file_source", f.fileSource().get().name());
            } else {
                o.putNull("file_source");
            }
            o.put("file_format", f.fileFormat());
            o.put("creation_time_ms", f.creationTimeEpochMillis());
            ArrayNode extra = NF.arrayNode();
            for (String x : f.extraFiles()) {
                extra.add(x);
            }
            o.set("extra_files", extra);
            if (keyType != null && f.minKey() != null && f.minKey().getFieldCount() == keyType.getFieldCount()) {
                o.set("min_key", rowToJson(keyType, f.minKey()));
                o.set("max_key", rowToJson(keyType, f.maxKey()));
            } else {
                o.putNull("min_key");
                o.putNull("max_key");
            }
            files.add(o);
            rowCounts.put(f.fileName(), f.rowCount());
        }

        if (snap.indexManifest() != null) {
            IndexFileHandler h = store.newIndexFileHandler();
            for (IndexManifestEntry e : h.readManifest(snap.indexManifest())) {
                if (e.kind() != FileKind.ADD) {
                    continue;
                }
                IndexFileMeta m = e.indexFile();
                ObjectNode o = NF.objectNode();
                o.set("partition", rowToJson(partType, e.partition()));
                o.put("partition_path", partitionPath(pf, e.partition()));
                o.put("bucket", e.bucket());
                o.put("index_type", m.indexType());
                o.put("file_name", m.fileName());
                o.put("file_size", m.fileSize());
                o.put("row_count", m.rowCount());
                LinkedHashMap<String, Pair<Integer, Integer>> ranges = m.deletionVectorsRanges();
                if (ranges == null) {
                    o.putNull("dv_ranges");
                } else {
                    Map<String, DeletionVector> dvs = h.readAllDeletionVectors(Collections.singletonList(m));
                    ArrayNode rs = NF.arrayNode();
                    for (Map.Entry<String, Pair<Integer, Integer>> r : ranges.entrySet()) {
                        ObjectNode ro = NF.objectNode();
                        ro.put("data_file", r.getKey());
                        ro.put("offset", r.getValue().getLeft());
                        ro.put("length", r.getValue().getRight());
                        DeletionVector dv = dvs.get(r.getKey());
                        if (dv == null) {
                            ro.putNull("cardinality");
                        } else {
                            ro.put("cardinality", dv.getCardinality());
                            Long rc = rowCounts.get(r.getKey());
                            if (withPositions && rc != null) {
                                ArrayNode pos = NF.arrayNode();
                                for (long i = 0; i < rc; i++) {
                                    if (dv.isDeleted(i)) {
                                        pos.add(i);
                                    }
                                }
                                ro.set("positions", pos);
                            }
                        }
                        rs.add(ro);
                    }
                    o.set("dv_ranges", rs);
                }
                indexFiles.add(o);
            }
        }
        return out;
    }

    // ------------------------------------------------------------------ read

    static JsonNode read(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        Map<String, String> tt = new HashMap<>();
        if (p.hasNonNull("tag")) {
            tt.put(CoreOptions.SCAN_TAG_NAME.key(), p.get("tag").asText());
        } else if (p.hasNonNull("snapshot_id")) {
            tt.put(CoreOptions.SCAN_SNAPSHOT_ID.key(), p.get("snapshot_id").asText());
        }
        Table read = tt.isEmpty() ? t : t.copy(tt);
        ReadBuilder rb = read.newReadBuilder();
        RowType rt = read.rowType();
        if (p.hasNonNull("projection")) {
            List<String> names = rt.getFieldNames();
            List<String> proj = textList(p.get("projection"));
            int[] idx = new int[proj.size()];
            for (int i = 0; i < idx.length; i++) {
                idx[i] = names.indexOf(proj.get(i));
                if (idx[i] < 0) {
                    throw new IllegalArgumentException("unknown column in projection: " + proj.get(i));
                }
            }
            rb = rb.withProjection(idx);
            rt = rt.project(idx);
        }
        final RowType outType = rt;
        if (p.hasNonNull("filter_equal")) {
            // [column, value]: the reader plans and reads with this filter (file indexes skip files)
            RowType full = read.rowType();
            int i = full.getFieldNames().indexOf(p.get("filter_equal").get(0).asText());
            rb = rb.withFilter(new org.apache.paimon.predicate.PredicateBuilder(full)
                    .equal(i, toInternal(full.getTypeAt(i), p.get("filter_equal").get(1))));
        }
        // tag_snapshot: the tag as the table's own (branch-aware) TagManager resolves it. 0.9's scan.tag-name looks
        // the tag up in main's tag directory even on a branch table.
        TableScan.Plan plan = p.path("tag_snapshot").asBoolean(false) && p.hasNonNull("tag")
                ? t.newSnapshotReader().withSnapshot(t.tagManager().taggedSnapshot(p.get("tag").asText())).read()
                : rb.newScan().plan();
        if (p.path("digest").asBoolean(false)) {
            // Row count and an order-independent digest (sum of mixed 64-bit hashes of each row's JSON): compares
            // large tables without shipping their rows.
            long[] acc = new long[2];
            try (RecordReader<InternalRow> reader = rb.newRead().createReader(plan)) {
                reader.forEachRemaining(
                        row -> {
                            long h = rowToJson(outType, row).toString().hashCode() * 0x9E3779B97F4A7C15L;
                            h ^= (h >>> 31) ^ row.getRowKind().ordinal();
                            acc[0]++;
                            acc[1] += h * 0xBF58476D1CE4E5B9L;
                        });
            }
            ObjectNode out = NF.objectNode();
            out.put("count", acc[0]);
            out.put("digest", Long.toHexString(acc[1]));
            return out;
        }
        ArrayNode rows = NF.arrayNode();
        ArrayNode kinds = NF.arrayNode();
        try (RecordReader<InternalRow> reader = rb.newRead().createReader(plan)) {
            reader.forEachRemaining(
                    row -> {
                        rows.add(rowToJson(outType, row));
                        kinds.add(row.getRowKind().shortString());
                    });
        }
        ObjectNode out = NF.objectNode();
        out.set("rows", rows);
        out.set("row_kinds", kinds);
        ArrayNode cols = NF.arrayNode();
        for (String n : outType.getFieldNames()) {
            cols.add(n);
        }
        out.set("columns", cols);
        out.put("splits", plan.splits().size());
        int planned = 0;
        for (org.apache.paimon.table.source.Split sp : plan.splits()) {
            planned += ((org.apache.paimon.table.source.DataSplit) sp).dataFiles().size();
        }
        out.put("files", planned);
        return out;
    }

    // ------------------------------------------------------------------ snapshots / tags

    static ObjectNode snapshotJson(Snapshot s) throws Exception {
        return (ObjectNode) MAPPER.readTree(s.toJson());
    }

    static JsonNode snapshots(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        ObjectNode out = NF.objectNode();
        ArrayNode snaps = NF.arrayNode();
        List<Snapshot> all = new ArrayList<>(t.snapshotManager().safelyGetAllSnapshots());
        all.sort((a, b) -> Long.compare(a.id(), b.id()));
        for (Snapshot s : all) {
            snaps.add(snapshotJson(s));
        }
        out.set("snapshots", snaps);
        ObjectNode tags = NF.objectNode();
        ObjectNode tagSnaps = NF.objectNode();
        TreeMap<String, Snapshot> byName = new TreeMap<>();
        for (Map.Entry<Snapshot, List<String>> e : t.tagManager().tags().entrySet()) {
            for (String name : e.getValue()) {
                byName.put(name, e.getKey());
            }
        }
        for (Map.Entry<String, Snapshot> e : byName.entrySet()) {
            tags.put(e.getKey(), e.getValue().id());
            tagSnaps.set(e.getKey(), snapshotJson(e.getValue()));
        }
        out.set("tags", tags);
        out.set("tag_snapshots", tagSnaps);
        Long earliest = t.snapshotManager().earliestSnapshotId();
        Long latest = t.snapshotManager().latestSnapshotId();
        if (earliest == null) {
            out.putNull("earliest");
        } else {
            out.put("earliest", earliest);
        }
        if (latest == null) {
            out.putNull("latest");
        } else {
            out.put("latest", latest);
        }
        return out;
    }

    static JsonNode createTag(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        String name = p.get("tag").asText();
        long id = p.hasNonNull("snapshot_id")
                ? p.get("snapshot_id").asLong()
                : t.snapshotManager().latestSnapshotId();
        if (p.hasNonNull("time_retained_ms")) {
            t.createTag(name, id, Duration.ofMillis(p.get("time_retained_ms").asLong()));
        } else {
            t.createTag(name, id);
        }
        return NF.objectNode().put("tag", name).put("snapshot_id", id);
    }

    /**
     * What the create_tag_from_timestamp / create_tag_from_watermark procedures do, with 0.9's classes: the live
     * snapshot from SnapshotManager.laterOrEqualTimeMills / laterOrEqualWatermark, an earlier tag-held one if a tag
     * qualifies first, then createTag.
     */
    static JsonNode createTagFrom(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        String name = p.get("tag").asText();
        boolean byWatermark = p.hasNonNull("watermark");
        long value = byWatermark ? p.get("watermark").asLong() : p.get("timestamp").asLong();
        Snapshot snapshot = byWatermark
                ? t.snapshotManager().laterOrEqualWatermark(value)
                : t.snapshotManager().laterOrEqualTimeMills(value);
        for (Snapshot tagged : t.tagManager().tags().keySet()) {
            if (byWatermark) {
                if (tagged.watermark() != null && value <= tagged.watermark()) {
                    if (snapshot == null || snapshot.watermark() == null
                            || tagged.watermark() < snapshot.watermark()) {
                        snapshot = tagged;
                    }
                    break;
                }
            } else if (value <= tagged.timeMillis()) {
                if (snapshot == null || tagged.timeMillis() < snapshot.timeMillis()) {
                    snapshot = tagged;
                }
                break;
            }
        }
        if (snapshot == null) {
            return NF.objectNode().put("error", "Could not find any snapshot later than " + value);
        }
        if (p.hasNonNull("time_retained_ms")) {
            t.createTag(name, snapshot.id(), Duration.ofMillis(p.get("time_retained_ms").asLong()));
        } else {
            t.createTag(name, snapshot.id());
        }
        ObjectNode out = NF.objectNode().put("tag", name).put("snapshot_id", snapshot.id())
                .put("commit_time", snapshot.timeMillis());
        if (snapshot.watermark() == null) {
            out.putNull("watermark");
        } else {
            out.put("watermark", snapshot.watermark());
        }
        return out;
    }

    /**
     * The mark_partition_done procedure of 0.9: the table's partition.mark-done-action actions
     * (PartitionMarkDoneAction.createActions: success-file, done-partition, mark-event through the catalog's
     * metastore client) on each partition {key: value}, as a partition path of the partition type's order.
     */
    static JsonNode markPartitionDone(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        List<Map<String, String>> specs = new ArrayList<>();
        for (JsonNode spec : p.get("partitions")) {
            specs.add(stringMap(spec));
        }
        List<String> paths = PartitionPathUtils.generatePartitionPaths(specs, t.schema().logicalPartitionType());
        List<PartitionMarkDoneAction> actions = PartitionMarkDoneAction.createActions(t, t.coreOptions());
        try {
            for (String path : paths) {
                for (PartitionMarkDoneAction action : actions) {
                    action.markDone(path);
                }
            }
        } finally {
            for (PartitionMarkDoneAction action : actions) {
                action.close();
            }
        }
        ArrayNode out = NF.arrayNode();
        paths.forEach(out::add);
        return NF.objectNode().set("partition_paths", out);
    }

    static JsonNode deleteTag(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        String name = p.get("tag").asText();
        t.deleteTag(name);
        return NF.objectNode().put("tag", name).put("deleted", true);
    }

    /** 0.9's TagTimeExpire (tags past their creation time + time retained), with the table's tag callbacks. */
    static JsonNode expireTags(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        List<String> before = t.tagManager().allTagNames();
        TagTimeExpire.create(t.snapshotManager(), t.tagManager(), t.store().newTagDeletion(),
                t.store().createTagCallbacks()).run();
        List<String> after = t.tagManager().allTagNames();
        ArrayNode expired = NF.arrayNode();
        for (String name : before) {
            if (!after.contains(name)) {
                expired.add(name);
            }
        }
        return NF.objectNode().set("expired", expired);
    }

    static JsonNode expireSnapshots(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        CoreOptions o = t.coreOptions();
        int retainMin = p.hasNonNull("retain_min") ? p.get("retain_min").asInt() : o.snapshotNumRetainMin();
        int retainMax = p.hasNonNull("retain_max") ? p.get("retain_max").asInt() : o.snapshotNumRetainMax();
        long timeRetained = p.hasNonNull("time_retained_ms")
                ? p.get("time_retained_ms").asLong()
                : o.snapshotTimeRetain().toMillis();
        int maxDeletes = p.hasNonNull("max_deletes") ? p.get("max_deletes").asInt() : o.snapshotExpireLimit();
        if (p.hasNonNull("now_ms")) {
            // ExpireSnapshotsImpl uses System.currentTimeMillis(); emulate "now" by shifting the window.
            timeRetained += System.currentTimeMillis() - p.get("now_ms").asLong();
        }
        // table_config: the table's own ExpireConfig (changelog retention included: decoupled when the changelog.*
        // options retain more), as a writer's automatic expiry does; otherwise the procedure's (never decoupled).
        ExpireConfig cfg = p.path("table_config").asBoolean(false)
                ? o.expireConfig()
                : ExpireConfig.builder()
                        .snapshotRetainMin(retainMin)
                        .snapshotRetainMax(retainMax)
                        .snapshotTimeRetain(Duration.ofMillis(timeRetained))
                        .snapshotMaxDeletes(maxDeletes)
                        .build();
        Long beforeEarliest = t.snapshotManager().earliestSnapshotId();
        int n = t.newExpireSnapshots().config(cfg).expire();
        ObjectNode out = NF.objectNode();
        out.put("expired", n);
        Long earliest = t.snapshotManager().earliestSnapshotId();
        Long latest = t.snapshotManager().latestSnapshotId();
        if (beforeEarliest == null) {
            out.putNull("earliest_before");
        } else {
            out.put("earliest_before", beforeEarliest);
        }
        if (earliest == null) {
            out.putNull("earliest");
        } else {
            out.put("earliest", earliest);
        }
        if (latest == null) {
            out.putNull("latest");
        } else {
            out.put("latest", latest);
        }
        return out;
    }

    /**
     * ExpireChangelogImpl with the table's changelog retention, overridden by retain_min / retain_max /
     * time_retained_ms / max_deletes (the Flink expire_changelogs procedure's arguments).
     */
    static JsonNode expireChangelogs(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        CoreOptions o = t.coreOptions();
        int retainMin = p.hasNonNull("retain_min") ? p.get("retain_min").asInt() : o.changelogNumRetainMin();
        int retainMax = p.hasNonNull("retain_max") ? p.get("retain_max").asInt() : o.changelogNumRetainMax();
        long timeRetained = p.hasNonNull("time_retained_ms")
                ? p.get("time_retained_ms").asLong()
                : o.changelogTimeRetain().toMillis();
        int maxDeletes = p.hasNonNull("max_deletes") ? p.get("max_deletes").asInt() : o.snapshotExpireLimit();
        if (p.hasNonNull("now_ms")) {
            timeRetained += System.currentTimeMillis() - p.get("now_ms").asLong();
        }
        ExpireConfig cfg = ExpireConfig.builder()
                .snapshotRetainMin(o.snapshotNumRetainMin())
                .snapshotRetainMax(o.snapshotNumRetainMax())
                .snapshotTimeRetain(o.snapshotTimeRetain())
                .snapshotMaxDeletes(o.snapshotExpireLimit())
                .changelogRetainMin(retainMin)
                .changelogRetainMax(retainMax)
                .changelogTimeRetain(Duration.ofMillis(timeRetained))
                .changelogMaxDeletes(maxDeletes)
                .build();
        int n = t.newExpireChangelog().config(cfg).expire();
        ObjectNode out = NF.objectNode();
        out.put("expired", n);
        Long earliest = t.snapshotManager().earliestLongLivedChangelogId();
        Long latest = t.snapshotManager().latestLongLivedChangelogId();
        if (earliest == null) {
            out.putNull("earliest");
        } else {
            out.put("earliest", earliest);
        }
        if (latest == null) {
            out.putNull("latest");
        } else {
            out.put("latest", latest);
        }
        return out;
    }

    // ------------------------------------------------------------------ branches and consumers

    /** Java's create_branch on the table's branch: from a tag, or empty (0.9 has no other form). */
    static JsonNode createBranch(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        String name = p.get("branch").asText();
        if (p.hasNonNull("tag")) {
            t.createBranch(name, p.get("tag").asText());
        } else {
            t.createBranch(name);
        }
        return NF.objectNode().put("branch", name).put("created", true);
    }

    static JsonNode deleteBranch(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        String name = p.get("branch").asText();
        t.deleteBranch(name);
        return NF.objectNode().put("branch", name).put("deleted", true);
    }

    /** Java's fast_forward: the table's branch (main for db.t) takes the state of `branch`. */
    static JsonNode fastForward(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        String name = p.get("branch").asText();
        t.fastForward(name);
        return NF.objectNode().put("branch", name).put("fast_forwarded", true);
    }

    static JsonNode branches(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        ArrayNode out = NF.arrayNode();
        List<String> names = new ArrayList<>(t.branchManager().branches());
        Collections.sort(names);
        for (String n : names) {
            out.add(n);
        }
        return NF.objectNode().set("branches", out);
    }

    static org.apache.paimon.consumer.ConsumerManager consumerManager(FileStoreTable t) {
        return new org.apache.paimon.consumer.ConsumerManager(t.fileIO(), t.location(), t.coreOptions().branch());
    }

    /** The consumers Java sees on the table's branch: {id: nextSnapshot}, and the minimum expiry honours. */
    static JsonNode consumers(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        org.apache.paimon.consumer.ConsumerManager cm = consumerManager(t);
        ObjectNode ids = NF.objectNode();
        for (Map.Entry<String, Long> e : new TreeMap<>(cm.consumers()).entrySet()) {
            ids.put(e.getKey(), e.getValue());
        }
        ObjectNode out = NF.objectNode();
        out.set("consumers", ids);
        java.util.OptionalLong min = cm.minNextSnapshot();
        if (min.isPresent()) {
            out.put("min_next_snapshot", min.getAsLong());
        } else {
            out.putNull("min_next_snapshot");
        }
        return out;
    }

    /** Java's reset_consumer: set a consumer's next snapshot (checked to exist, as the procedure does), or delete it
     *  (no next_snapshot). */
    static JsonNode resetConsumer(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        String id = p.get("consumer_id").asText();
        org.apache.paimon.consumer.ConsumerManager cm = consumerManager(t);
        if (p.hasNonNull("next_snapshot")) {
            long n = p.get("next_snapshot").asLong();
            if (!p.path("unchecked").asBoolean(false)) {
                t.snapshotManager().snapshot(n);
            }
            cm.resetConsumer(id, new org.apache.paimon.consumer.Consumer(n));
        } else {
            cm.deleteConsumer(id);
        }
        return NF.objectNode().put("consumer_id", id);
    }

    // ------------------------------------------------------------------ check_files

    static void need(FileIO io, Path path, String kind, String owner, ArrayNode missing, Set<String> seen) {
        String key = path.toString();
        if (!seen.add(key)) {
            return;
        }
        boolean ok;
        try {
            ok = io.exists(path);
        } catch (Exception e) {
            ok = false;
        }
        if (!ok) {
            missing.add(NF.objectNode().put("path", key).put("kind", kind).put("referenced_by", owner));
        }
    }

    static JsonNode checkFiles(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        FileIO io = t.fileIO();
        FileStore<?> store = t.store();
        FileStorePathFactory pf = store.pathFactory();
        ManifestList manifestList = store.manifestListFactory().create();
        ManifestFile manifestFile = store.manifestFileFactory().create();
        IndexFileHandler ih = store.newIndexFileHandler();

        Map<String, Snapshot> owners = new LinkedHashMap<>();
        List<Snapshot> all = new ArrayList<>(t.snapshotManager().safelyGetAllSnapshots());
        all.sort((a, b) -> Long.compare(a.id(), b.id()));
        for (Snapshot s : all) {
            owners.put("snapshot-" + s.id(), s);
        }
        for (Map.Entry<Snapshot, List<String>> e : t.tagManager().tags().entrySet()) {
            for (String name : e.getValue()) {
                owners.put("tag-" + name, e.getKey());
            }
        }

        ArrayNode missing = NF.arrayNode();
        Set<String> seen = new java.util.HashSet<>();
        int checkedOwners = 0;
        for (Map.Entry<String, Snapshot> e : owners.entrySet()) {
            String owner = e.getKey();
            Snapshot s = e.getValue();
            checkedOwners++;
            int before = missing.size();
            List<String> lists = new ArrayList<>();
            lists.add(s.baseManifestList());
            lists.add(s.deltaManifestList());
            if (s.changelogManifestList() != null) {
                lists.add(s.changelogManifestList());
            }
            for (String l : lists) {
                need(io, pf.toManifestListPath(l), "manifest_list", owner, missing, seen);
            }
            if (missing.size() > before) {
                continue;
            }
            List<ManifestFileMeta> manifests = new ArrayList<>(manifestList.readDataManifests(s));
            List<ManifestFileMeta> changelogManifests = manifestList.readChangelogManifests(s);
            manifests.addAll(changelogManifests);
            for (ManifestFileMeta m : manifests) {
                need(io, pf.toManifestFilePath(m.fileName()), "manifest", owner, missing, seen);
            }
            if (s.indexManifest() != null) {
                Path im = pf.indexManifestFileFactory().toPath(s.indexManifest());
                need(io, im, "index_manifest", owner, missing, seen);
                boolean imOk;
                try {
                    imOk = io.exists(im);
                } catch (Exception ex) {
                    imOk = false;
                }
                if (imOk) {
                    for (IndexManifestEntry ie : ih.readManifest(s.indexManifest())) {
                        need(io, ih.filePath(ie.indexFile()), "index_file", owner, missing, seen);
                    }
                }
            }
            if (missing.size() > before) {
                continue;
            }
            // live data files of the snapshot (base + delta merged)
            for (ManifestEntry me : store.newScan().withSnapshot(s).plan().files()) {
                DataFilePathFactory dpf = pf.createDataFilePathFactory(me.partition(), me.bucket());
                need(io, dpf.toPath(me.fileName()), "data_file", owner, missing, seen);
                for (String extra : me.file().extraFiles()) {
                    need(io, dpf.toPath(extra), "extra_file", owner, missing, seen);
                }
            }
            // changelog files
            for (ManifestFileMeta m : changelogManifests) {
                for (ManifestEntry me : manifestFile.read(m.fileName(), m.fileSize())) {
                    if (me.kind() != FileKind.ADD) {
                        continue;
                    }
                    DataFilePathFactory dpf = pf.createDataFilePathFactory(me.partition(), me.bucket());
                    need(io, dpf.toPath(me.fileName()), "changelog_file", owner, missing, seen);
                }
            }
        }
        ObjectNode out = NF.objectNode();
        out.set("missing", missing);
        out.put("checked_snapshots_and_tags", checkedOwners);
        out.put("checked_files", seen.size());
        return out;
    }

    // ------------------------------------------------------------------ remove_orphans

    static JsonNode removeOrphans(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        boolean dryRun = p.path("dry_run").asBoolean(false);
        OrphanFilesClean clean = new OrphanFilesClean(t);
        long olderThan = p.hasNonNull("older_than_ms")
                ? p.get("older_than_ms").asLong()
                : System.currentTimeMillis() - Duration.ofDays(1).toMillis();
        Field f = OrphanFilesClean.class.getDeclaredField("olderThanMillis");
        f.setAccessible(true);
        f.setLong(clean, olderThan);
        if (dryRun) {
            clean.fileCleaner(path -> {});
        }
        List<Path> deleted = clean.clean();
        ArrayNode out = NF.arrayNode();
        List<String> names = new ArrayList<>();
        for (Path x : deleted) {
            java.net.URI u = x.toUri();
            names.add("file".equals(u.getScheme()) ? u.getPath() : x.toString());
        }
        Collections.sort(names);
        for (String n : names) {
            out.add(n);
        }
        ObjectNode o = NF.objectNode();
        o.set("deleted", out);
        o.put("dry_run", dryRun);
        return o;
    }

    // ------------------------------------------------------------------ expire_partitions

    static String describe(Throwable e) {
        Throwable c = e;
        while ((c instanceof InvocationTargetException || c instanceof java.util.concurrent.ExecutionException
                || (c instanceof RuntimeException && c.getClass() == RuntimeException.class))
                && c.getCause() != null) {
            c = c.getCause();
        }
        return c.getClass().getSimpleName() + ": " + c.getMessage();
    }

    /**
     * Java's own partition expiry (PartitionExpire of 0.9, check interval 0 as the expire_partitions procedure
     * uses), at a given local "now" (its package-private expire(LocalDateTime, long), via reflection).
     * Payload: {now: "yyyy-MM-ddTHH:mm[:ss]", expiration_time_ms?, strategy?, timestamp_formatter?,
     * timestamp_pattern?} (unset: the table's options). Result: {expired: [{key: value}], error?, snapshot_id}.
     */
    static JsonNode expirePartitions(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        Map<String, String> opts = new HashMap<>(t.options());
        for (String[] kv : new String[][] {
                {"strategy", CoreOptions.PARTITION_EXPIRATION_STRATEGY.key()},
                {"timestamp_formatter", CoreOptions.PARTITION_TIMESTAMP_FORMATTER.key()},
                {"timestamp_pattern", CoreOptions.PARTITION_TIMESTAMP_PATTERN.key()}}) {
            if (p.has(kv[0])) {
                if (p.get(kv[0]).isNull()) {
                    opts.remove(kv[1]);
                } else {
                    opts.put(kv[1], p.get(kv[0]).asText());
                }
            }
        }
        CoreOptions co = CoreOptions.fromMap(opts);
        Duration exp = p.hasNonNull("expiration_time_ms")
                ? Duration.ofMillis(p.get("expiration_time_ms").asLong())
                : co.partitionExpireTime();
        FileStore<?> store = t.store();
        ObjectNode out = NF.objectNode();
        ArrayNode expired = NF.arrayNode();
        try {
            // As AbstractFileStore.newPartitionExpire and TableCommitImpl build it: the metastore client when
            // metastore.partitioned-table is set in a catalog that has one, and the catalog's lock on the commit.
            MetastoreClient.Factory msFactory = t.catalogEnvironment().metastoreClientFactory();
            MetastoreClient ms = co.partitionedTableInMetastore() && msFactory != null ? msFactory.create() : null;
            PartitionExpire pe = new PartitionExpire(
                    exp, Duration.ZERO,
                    PartitionExpireStrategy.createPartitionExpireStrategy(co, store.partitionType()),
                    store.newScan(), store.newCommit(UUID.randomUUID().toString()), ms)
                    .withLock(t.catalogEnvironment().lockFactory().create());
            Method m = PartitionExpire.class.getDeclaredMethod("expire", LocalDateTime.class, long.class);
            m.setAccessible(true);
            LocalDateTime now = LocalDateTime.parse(p.get("now").asText());
            @SuppressWarnings("unchecked")
            List<Map<String, String>> r = (List<Map<String, String>>) m.invoke(pe, now, Long.MAX_VALUE);
            if (r != null) {
                for (Map<String, String> part : r) {
                    ObjectNode o = NF.objectNode();
                    for (Map.Entry<String, String> e : part.entrySet()) {
                        o.put(e.getKey(), e.getValue());
                    }
                    expired.add(o);
                }
            }
        } catch (Throwable e) {
            out.put("error", describe(e));
        }
        out.set("expired", expired);
        out.put("snapshot_id", latestId(t));
        return out;
    }

    /**
     * PartitionTimeExtractor of 0.9 on literal cases: {cases: [{keys: [..], values: [..], pattern?, formatter?}]}
     * -> {results: [{time: LocalDateTime.toString() | null, error: null | "Class: message"}]}.
     */
    static JsonNode partitionTimes(JsonNode p) {
        ArrayNode results = NF.arrayNode();
        for (JsonNode c : p.get("cases")) {
            ObjectNode r = NF.objectNode();
            try {
                String pattern = c.hasNonNull("pattern") ? c.get("pattern").asText() : null;
                String formatter = c.hasNonNull("formatter") ? c.get("formatter").asText() : null;
                List<String> keys = textList(c.get("keys"));
                List<String> values = new ArrayList<>();
                for (JsonNode v : c.get("values")) {
                    values.add(v.isNull() ? null : v.asText());
                }
                LocalDateTime ldt = new PartitionTimeExtractor(pattern, formatter).extract(keys, values);
                r.put("time", ldt.toString());
                r.putNull("error");
            } catch (Throwable e) {
                r.putNull("time");
                r.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            results.add(r);
        }
        return NF.objectNode().set("results", results);
    }

    // ------------------------------------------------------------------ file_index

    /**
     * {queries: [[column, value]], snapshot_id?} -> {files: [{file_name, index: "embedded" | file name | null,
     * columns: {column: [index types]}, results: [true (may contain) | false (skip)]}]}: every live data file's index
     * opened with 0.9's own FileIndexFormat reader and asked each equality query through FileIndexPredicate.
     */
    static JsonNode fileIndex(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        Snapshot snap = resolveSnapshot(t, p);
        FileStore<?> store = t.store();
        FileStorePathFactory pf = store.pathFactory();
        SchemaManager sm = new SchemaManager(t.fileIO(), t.location());
        ArrayNode files = NF.arrayNode();
        for (ManifestEntry e : store.newScan().withSnapshot(snap).plan().files()) {
            DataFileMeta f = e.file();
            RowType fileType = sm.schema(f.schemaId()).logicalRowType();
            ObjectNode fo = NF.objectNode().put("file_name", f.fileName());
            org.apache.paimon.fileindex.FileIndexPredicate pred = null;
            Path indexPath = null;
            if (f.embeddedIndex() != null) {
                pred = new org.apache.paimon.fileindex.FileIndexPredicate(f.embeddedIndex(), fileType);
                fo.put("index", "embedded");
            } else {
                for (String x : f.extraFiles()) {
                    if (x.endsWith(".index")) {
                        indexPath = new Path(pf.createDataFilePathFactory(e.partition(), e.bucket())
                                .toPath(f.fileName()).getParent(), x);
                        pred = new org.apache.paimon.fileindex.FileIndexPredicate(indexPath, t.fileIO(), fileType);
                        fo.put("index", x);
                    }
                }
                if (pred == null) {
                    fo.putNull("index");
                }
            }
            ObjectNode cols = NF.objectNode();
            if (pred != null) {
                byte[] bytes = f.embeddedIndex();
                if (bytes == null) {
                    try (org.apache.paimon.fs.SeekableInputStream in = t.fileIO().newInputStream(indexPath)) {
                        bytes = in.readAllBytes();
                    }
                }
                try (org.apache.paimon.fileindex.FileIndexFormat.Reader r =
                        org.apache.paimon.fileindex.FileIndexFormat.createReader(
                                new org.apache.paimon.fs.ByteArraySeekableStream(bytes), fileType)) {
                    for (Map.Entry<String, Map<String, byte[]>> c : r.readAll().entrySet()) {
                        ArrayNode types = NF.arrayNode();
                        new java.util.TreeSet<>(c.getValue().keySet()).forEach(types::add);
                        cols.set(c.getKey(), types);
                    }
                }
            }
            fo.set("columns", cols);
            ArrayNode results = NF.arrayNode();
            for (JsonNode q : p.path("queries")) {
                int i = fileType.getFieldNames().indexOf(q.get(0).asText());
                if (pred == null || i < 0) {
                    results.add(true);
                    continue;
                }
                results.add(pred.testPredicate(new org.apache.paimon.predicate.PredicateBuilder(fileType)
                        .equal(i, toInternal(fileType.getTypeAt(i), q.get(1)))));
            }
            fo.set("results", results);
            if (pred != null) {
                pred.close();
            }
            files.add(fo);
        }
        ObjectNode out = NF.objectNode();
        out.set("files", files);
        return out;
    }

    // ------------------------------------------------------------------ delete_positions

    /**
     * {positions: {data file name: [row positions]}} -> {snapshot_ids, index_files_added, index_files_deleted}:
     * marks rows of an unaware-bucket append table's files deleted the way 0.9's Spark DELETE does in
     * deletion-vector mode (PaimonSparkWriter.persistDeletionVectors): one
     * AppendDeletionFileMaintainer.forUnawareAppend per partition, its persist() writing the new vectors with
     * DeletionVectorsIndexFile.writeWithRolling (deletion-vector.index-file.target-size) and rewriting the other
     * vectors of every index file it touched; committed as one APPEND snapshot.
     */
    static JsonNode deletePositions(JsonNode p) throws Exception {
        FileStoreTable t = table(p);
        if (t.bucketMode() != BucketMode.BUCKET_UNAWARE) {
            throw new IllegalArgumentException("delete_positions needs an unaware-bucket append table");
        }
        String user = p.hasNonNull("commit_user") ? p.get("commit_user").asText() : UUID.randomUUID().toString();
        Snapshot latest = t.snapshotManager().latestSnapshot();
        JsonNode positions = p.get("positions");
        Map<BinaryRow, List<String>> byPartition = new LinkedHashMap<>();
        for (ManifestEntry e : t.store().newScan().withSnapshot(latest).plan().files()) {
            if (positions.has(e.file().fileName())) {
                byPartition.computeIfAbsent(e.partition(), k -> new ArrayList<>()).add(e.file().fileName());
            }
        }
        IndexFileHandler handler = t.store().newIndexFileHandler();
        List<CommitMessage> msgs = new ArrayList<>();
        int added = 0;
        int deleted = 0;
        for (Map.Entry<BinaryRow, List<String>> e : byPartition.entrySet()) {
            org.apache.paimon.deletionvectors.append.UnawareAppendDeletionFileMaintainer m =
                    org.apache.paimon.deletionvectors.append.AppendDeletionFileMaintainer.forUnawareAppend(
                            handler, latest.id(), e.getKey());
            for (String file : e.getValue()) {
                DeletionVector dv = new org.apache.paimon.deletionvectors.BitmapDeletionVector();
                for (JsonNode pos : positions.get(file)) {
                    dv.delete(pos.asLong());
                }
                DeletionVector old = m.getDeletionVector(file);
                if (old != null) {
                    dv.merge(old); // the rows deleted before stay deleted
                }
                m.notifyNewDeletionVector(file, dv);
            }
            List<IndexFileMeta> newFiles = new ArrayList<>();
            List<IndexFileMeta> oldFiles = new ArrayList<>();
            for (IndexManifestEntry ie : m.persist()) {
                (ie.kind() == FileKind.ADD ? newFiles : oldFiles).add(ie.indexFile());
            }
            added += newFiles.size();
            deleted += oldFiles.size();
            msgs.add(new org.apache.paimon.table.sink.CommitMessageImpl(e.getKey(), 0,
                    org.apache.paimon.io.DataIncrement.emptyIncrement(),
                    org.apache.paimon.io.CompactIncrement.emptyIncrement(),
                    new org.apache.paimon.io.IndexIncrement(newFiles, oldFiles)));
        }
        long before = latestId(t);
        try (TableCommitImpl commit = t.newCommit(user)) {
            commit.commit(msgs);
        }
        ObjectNode out = NF.objectNode();
        out.set("snapshot_ids", newSnapshotIds(t, before));
        out.put("index_files_added", added);
        out.put("index_files_deleted", deleted);
        return out;
    }
}
