package rfs.lucenetest;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Random;
import java.util.zip.CRC32;
import org.apache.lucene.codecs.Codec;
import org.apache.lucene.codecs.FilterCodec;
import org.apache.lucene.codecs.StoredFieldsFormat;
import org.apache.lucene.codecs.compressing.CompressingStoredFieldsFormat;
import org.apache.lucene.codecs.compressing.CompressionMode;
import org.apache.lucene.codecs.lucene87.Lucene87Codec;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.FilterCodecReader;
import org.apache.lucene.index.FilterLeafReader;
import org.apache.lucene.index.IndexOptions;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.NoMergePolicy;
import org.apache.lucene.index.SegmentCommitInfo;
import org.apache.lucene.index.SegmentInfos;
import org.apache.lucene.index.SegmentReader;
import org.apache.lucene.index.SoftDeletesDirectoryReaderWrapper;
import org.apache.lucene.index.Term;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;
import org.apache.lucene.util.Bits;

/**
 * Writes real Lucene 8 indices (codec Lucene87; Debian liblucene8-java is 8.8.1) with Elasticsearch-like stored fields for rfs's Lucene reader
 * tests, plus a golden file of the live documents as Lucene itself reads them back.
 *
 * <p>Usage: {@code WriteLuceneIndex <outDir>} writes the test indices; {@code WriteLuceneIndex
 * perf <outDir> <docs> <speed|compression>} writes one large index for speed measurements and
 * prints how fast Java Lucene reads it.
 *
 * <p>Each index directory gets {@code golden.jsonl}: one line per live document that has a stored
 * {@code _id} (docs/formats.md D.2), in the order rfs reads them (segments sorted by name, then doc
 * id), with the shard-global cursor, decoded id, routing, and the length and CRC-32 of
 * {@code _source}; a last line has the expected counts.
 */
public final class WriteLuceneIndex {
  static final String SOFT_DELETES = "__soft_deletes";

  /** Lucene50 BEST_SPEED stored fields (LZ4 without preset dictionary), registered by SPI. */
  public static final class Lucene50Fast extends FilterCodec {
    private final StoredFieldsFormat sf =
        new CompressingStoredFieldsFormat(
            "Lucene50StoredFieldsFastData", CompressionMode.FAST, 1 << 14, 128, 10);

    public Lucene50Fast() {
      super("RfsLucene50Fast", new Lucene87Codec());
    }

    @Override
    public StoredFieldsFormat storedFieldsFormat() {
      return sf;
    }
  }

  /** Lucene50 BEST_COMPRESSION stored fields (plain DEFLATE), registered by SPI. */
  public static final class Lucene50High extends FilterCodec {
    private final StoredFieldsFormat sf =
        new CompressingStoredFieldsFormat(
            "Lucene50StoredFieldsHighData", CompressionMode.HIGH_COMPRESSION, 61440, 512, 10);

    public Lucene50High() {
      super("RfsLucene50High", new Lucene87Codec());
    }

    @Override
    public StoredFieldsFormat storedFieldsFormat() {
      return sf;
    }
  }

  // ---- ES _id encoding (ES Uid.encodeId; docs/formats.md D.2) ----

  static boolean isUrlBase64(String id) {
    if (id.length() % 4 == 1) return false;
    for (char c : id.toCharArray()) {
      boolean ok =
          (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'
              || c == '_';
      if (!ok) return false;
    }
    if (id.length() % 4 == 2) return "AQgw".indexOf(id.charAt(id.length() - 1)) >= 0;
    if (id.length() % 4 == 3) {
      return "AEIMQUYcgkosw048".indexOf(id.charAt(id.length() - 1)) >= 0;
    }
    return true;
  }

  static byte[] encodeId(String id) {
    if (!id.isEmpty() && id.chars().allMatch(c -> c >= '0' && c <= '9')) {
      byte[] b = new byte[1 + (id.length() + 1) / 2];
      b[0] = (byte) 0xFE;
      for (int i = 0; i < id.length(); i += 2) {
        int hi = id.charAt(i) - '0';
        int lo = i + 1 < id.length() ? id.charAt(i + 1) - '0' : 0x0F;
        b[1 + i / 2] = (byte) (hi << 4 | lo);
      }
      return b;
    }
    if (isUrlBase64(id)) {
      byte[] raw = Base64.getUrlDecoder().decode(id);
      if (raw.length > 0 && (raw[0] & 0xFF) >= 0xFD) {
        byte[] b = new byte[raw.length + 1];
        b[0] = (byte) 0xFD;
        System.arraycopy(raw, 0, b, 1, raw.length);
        return b;
      }
      return raw;
    }
    byte[] utf8 = id.getBytes(StandardCharsets.UTF_8);
    byte[] b = new byte[utf8.length + 1];
    b[0] = (byte) 0xFF;
    System.arraycopy(utf8, 0, b, 1, utf8.length);
    return b;
  }

  static String decodeId(byte[] b) {
    int first = b[0] & 0xFF;
    if (first == 0xFE) {
      StringBuilder sb = new StringBuilder();
      for (int i = 1; i < b.length; i++) {
        int hi = (b[i] >> 4) & 15;
        int lo = b[i] & 15;
        sb.append((char) ('0' + hi));
        if (lo == 15 && i == b.length - 1) break;
        sb.append((char) ('0' + lo));
      }
      return sb.toString();
    }
    if (first == 0xFF) return new String(b, 1, b.length - 1, StandardCharsets.UTF_8);
    int off = first == 0xFD ? 1 : 0;
    byte[] raw = new byte[b.length - off];
    System.arraycopy(b, off, raw, 0, raw.length);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
  }

  // ---- documents ----

  static final FieldType ID_TYPE = new FieldType();

  static {
    ID_TYPE.setIndexOptions(IndexOptions.DOCS);
    ID_TYPE.setStored(true);
    ID_TYPE.setOmitNorms(true);
    ID_TYPE.setTokenized(false);
    ID_TYPE.freeze();
  }

  static String makeId(Random rnd, int i) {
    switch (i % 5) {
      case 0:
        return Integer.toString(i * 7);  // numeric, even or odd length
      case 1:
        { // an auto-generated-looking id: 15 random bytes as base64url (often >= 0xFD first)
          byte[] raw = new byte[15];
          rnd.nextBytes(raw);
          if (i % 10 == 1) raw[0] = (byte) (0xFD + rnd.nextInt(3));
          return Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
        }
      case 2:
        return "doc-" + i + "-\u00e9t\u00e9 #\"q\"";
      case 3:
        return "0" + i;  // leading zero kept
      default:
        return "id_" + i + "x";
    }
  }

  static String makeSource(Random rnd, int i, int size) {
    StringBuilder sb = new StringBuilder();
    if (i % 3 == 0) sb.append("\n\n\n");
    sb.append("{\"i\":").append(i).append(",\"title\":\"t\u00e4st ").append(i).append("\",\"body\":\"");
    String words = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod ";
    while (sb.length() < size) {
      sb.append(words, 0, 5 + rnd.nextInt(words.length() - 5));
      sb.append(rnd.nextInt(1000));
    }
    sb.append("\"}");
    return sb.toString();
  }

  static Document esDoc(String id, String source, String routing) {
    Document d = new Document();
    d.add(new Field("_id", new BytesRef(encodeId(id)), ID_TYPE));
    if (source != null) {
      d.add(new StoredField("_source", new BytesRef(source.getBytes(StandardCharsets.UTF_8))));
    }
    if (routing != null) d.add(new StringField("_routing", routing, Field.Store.YES));
    d.add(new NumericDocValuesField("_seq_no", 1));
    return d;
  }

  static Document nestedChild(int i, int j) {
    Document d = new Document();
    d.add(new StringField("_nested_path", "comments", Field.Store.NO));
    if (j == 0) d.add(new StoredField("comments.stored", "child " + i));  // a stored user field
    return d;
  }

  static Term idTerm(String id) {
    return new Term("_id", new BytesRef(encodeId(id)));
  }

  /** Writes one index. */
  static void writeIndex(
      Path path, Codec codec, boolean compound, int numDocs, int docsPerCommit, long seed,
      int bigDocs)
      throws IOException {
    Random rnd = new Random(seed);
    try (Directory dir = FSDirectory.open(path)) {
      IndexWriterConfig iwc = new IndexWriterConfig();
      iwc.setCodec(codec);
      iwc.setUseCompoundFile(compound);
      iwc.setMergePolicy(NoMergePolicy.INSTANCE);
      iwc.setSoftDeletesField(SOFT_DELETES);
      iwc.setRAMBufferSizeMB(256);
      try (IndexWriter w = new IndexWriter(dir, iwc)) {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < numDocs; i++) {
          String id = makeId(rnd, i);
          String routing = i % 7 == 0 ? "user" + (i % 13) : null;
          int size = 20 + rnd.nextInt(i % 11 == 0 ? 4000 : 400);
          if (i < bigDocs) size = 3 * 1024 * 1024 + rnd.nextInt(1000);  // sliced chunks
          if (i % 50 == 25) {
            // A nested block: children (no _id) precede their parent.
            List<Document> block = new ArrayList<>();
            block.add(nestedChild(i, 0));
            block.add(nestedChild(i, 1));
            block.add(esDoc(id, makeSource(rnd, i, size), routing));
            w.addDocuments(block);
          } else if (i % 97 == 13) {
            // A live doc without _source (source disabled).
            w.addDocument(esDoc(id, null, routing));
          } else {
            w.addDocument(esDoc(id, makeSource(rnd, i, size), routing));
          }
          ids.add(id);
          if (i > 0 && i % 9 == 0) {
            // Soft update (ES update): new version, old one gets __soft_deletes = 1.
            String target = ids.get(rnd.nextInt(ids.size()));
            w.softUpdateDocument(
                idTerm(target),
                esDoc(target, makeSource(rnd, i + 100000, 50), null),
                new NumericDocValuesField(SOFT_DELETES, 1));
          }
          if (i > 0 && i % 23 == 0) {
            // ES delete: a tombstone (id, no source) soft-deletes the doc and itself.
            String target = ids.get(rnd.nextInt(ids.size()));
            Document tomb = esDoc(target, null, null);
            tomb.add(new NumericDocValuesField(SOFT_DELETES, 1));
            w.softUpdateDocument(idTerm(target), tomb, new NumericDocValuesField(SOFT_DELETES, 1));
          }
          if (i > 0 && i % 31 == 0) {
            // A hard delete (.liv), as ES 5/6 without soft deletes.
            w.deleteDocuments(idTerm(ids.get(rnd.nextInt(ids.size()))));
          }
          if (docsPerCommit > 0 && i % docsPerCommit == docsPerCommit - 1) w.commit();
        }
        w.commit();
      }
      writeGolden(dir, path.resolve("golden.jsonl"));
    }
  }

  static String jsonString(String s) {
    StringBuilder sb = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') sb.append('\\').append(c);
      else if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
      else sb.append(c);
    }
    return sb.append('"').toString();
  }

  static String segmentName(LeafReader leaf) {
    LeafReader r = leaf;
    while (!(r instanceof SegmentReader)) {
      if (r instanceof FilterLeafReader) {
        r = ((FilterLeafReader) r).getDelegate();
      } else if (r instanceof FilterCodecReader) {
        r = ((FilterCodecReader) r).getDelegate();
      } else {
        throw new IllegalStateException("unexpected leaf " + r);
      }
    }
    return ((SegmentReader) r).getSegmentInfo().info.name;
  }

  /** Reads the index back with Lucene (soft deletes applied) and writes the golden file. */
  static void writeGolden(Directory dir, Path out) throws IOException {
    SegmentInfos infos = SegmentInfos.readLatestCommit(dir);
    List<SegmentCommitInfo> segs = new ArrayList<>();
    for (SegmentCommitInfo sci : infos) segs.add(sci);
    segs.sort((a, b) -> a.info.name.compareTo(b.info.name));
    java.util.Map<String, Long> bases = new java.util.HashMap<>();
    long base = 0;
    for (SegmentCommitInfo sci : segs) {
      bases.put(sci.info.name, base);
      base += sci.info.maxDoc();
    }
    long emitted = 0, noSource = 0, nested = 0, deleted = 0;
    try (DirectoryReader raw = DirectoryReader.open(dir);
        PrintWriter pw = new PrintWriter(Files.newBufferedWriter(out, StandardCharsets.UTF_8))) {
      DirectoryReader reader = new SoftDeletesDirectoryReaderWrapper(raw, SOFT_DELETES);
      List<LeafReader> leaves = new ArrayList<>();
      for (LeafReaderContext ctx : reader.leaves()) leaves.add(ctx.reader());
      leaves.sort((a, b) -> segmentName(a).compareTo(segmentName(b)));
      java.util.Set<String> seen = new java.util.HashSet<>();
      for (LeafReader leaf : leaves) {
        String name = segmentName(leaf);
        seen.add(name);
        long segBase = bases.get(name);
        Bits live = leaf.getLiveDocs();
        for (int d = 0; d < leaf.maxDoc(); d++) {
          if (live != null && !live.get(d)) {
            deleted++;
            continue;
          }
          Document doc = leaf.document(d);
          BytesRef id = doc.getBinaryValue("_id");
          if (id == null) {
            nested++;
            continue;
          }
          BytesRef src = doc.getBinaryValue("_source");
          String routing = doc.get("_routing");
          StringBuilder line = new StringBuilder();
          line.append("{\"cursor\":").append(segBase + d);
          line.append(",\"id\":").append(jsonString(decodeId(BytesRef.deepCopyOf(id).bytes)));
          line.append(",\"routing\":").append(routing == null ? "null" : jsonString(routing));
          if (src == null) {
            noSource++;
            line.append(",\"source_len\":-1,\"source_crc32\":0}");
          } else {
            CRC32 crc = new CRC32();
            crc.update(src.bytes, src.offset, src.length);
            line.append(",\"source_len\":").append(src.length);
            line.append(",\"source_crc32\":").append(crc.getValue()).append('}');
          }
          pw.println(line);
          emitted++;
        }
      }
      // Segments the wrapper dropped (fully deleted) still count as deleted docs.
      for (SegmentCommitInfo sci : segs) {
        if (!seen.contains(sci.info.name)) deleted += sci.info.maxDoc();
      }
      pw.println(
          "{\"stats\":true,\"docs_emitted\":" + emitted + ",\"deleted_skipped\":" + deleted
              + ",\"nested_skipped\":" + nested + ",\"no_source_docs\":" + noSource
              + ",\"segments\":" + segs.size() + "}");
    }
  }

  /** Java Lucene's read speed over all live docs (_id and _source), like the Java tool. */
  static void measureJava(Path path) throws IOException {
    try (Directory dir = FSDirectory.open(path); DirectoryReader raw = DirectoryReader.open(dir)) {
      DirectoryReader reader = new SoftDeletesDirectoryReaderWrapper(raw, SOFT_DELETES);
      for (int round = 0; round < 3; round++) {
        long start = System.nanoTime();
        long docs = 0, bytes = 0;
        for (LeafReaderContext ctx : reader.leaves()) {
          LeafReader leaf = ctx.reader();
          Bits live = leaf.getLiveDocs();
          for (int d = 0; d < leaf.maxDoc(); d++) {
            if (live != null && !live.get(d)) continue;
            Document doc = leaf.document(d);
            BytesRef id = doc.getBinaryValue("_id");
            if (id == null) continue;
            String sid = decodeId(BytesRef.deepCopyOf(id).bytes);
            BytesRef src = doc.getBinaryValue("_source");
            if (src != null) bytes += src.length;
            docs += sid.isEmpty() ? 0 : 1;
          }
        }
        double secs = (System.nanoTime() - start) / 1e9;
        System.out.printf(
            "java-lucene round %d: %d docs, %.1f MB _source, %.3f s, %.0f docs/s, %.1f MB/s%n",
            round, docs, bytes / 1e6, secs, docs / secs, bytes / 1e6 / secs);
      }
    }
  }

  public static void main(String[] args) throws IOException {
    if (args.length >= 1 && args[0].equals("perf")) {
      Path out = Paths.get(args[1]);
      int docs = Integer.parseInt(args[2]);
      Codec codec =
          new Lucene87Codec(
              args[3].equals("compression")
                  ? Lucene87Codec.Mode.BEST_COMPRESSION
                  : Lucene87Codec.Mode.BEST_SPEED);
      if (!Files.exists(out.resolve("golden.jsonl"))) {
        Files.createDirectories(out);
        writeIndex(out, codec, false, docs, 50000, 42, 0);
      }
      measureJava(out);
      return;
    }
    Path root = Paths.get(args[0]);
    Files.createDirectories(root);
    Codec speed = new Lucene87Codec(Lucene87Codec.Mode.BEST_SPEED);
    Codec compression = new Lucene87Codec(Lucene87Codec.Mode.BEST_COMPRESSION);
    writeIndex(Files.createDirectories(root.resolve("speed_multi")), speed, false, 3000, 700, 1, 2);
    writeIndex(
        Files.createDirectories(root.resolve("compression_compound")), compression, true, 3000,
        700, 2, 2);
    writeIndex(Files.createDirectories(root.resolve("resume_small")), speed, false, 160, 4, 3, 0);
    writeIndex(
        Files.createDirectories(root.resolve("lucene50_fast")), new Lucene50Fast(), false, 1500,
        400, 4, 1);
    writeIndex(
        Files.createDirectories(root.resolve("lucene50_high")), new Lucene50High(), true, 1500,
        400, 5, 1);
    Files.writeString(root.resolve("DONE"), "ok\n");
  }
}
