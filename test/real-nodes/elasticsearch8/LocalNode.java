// Starts one real Elasticsearch 8 node in this JVM for scripts/local-cluster --distribution
// elasticsearch --version 8: the engine's own org.elasticsearch.node.Node, with the modules
// folder scripts/local-cluster install laid out (the Netty HTTP and transport layer). The
// launchers beside it (../elasticsearch, ../opensearch) take the same arguments, plus --modules
// here.
//
// Elasticsearch 8 has no runner library, and its test framework's MockNode refuses to run as
// root, so this builds the node as the distribution's bootstrap does, less the bootstrap checks,
// the security manager and the native-controller daemons. Once the node answers, this writes
// "<pid> <http port>" to --ready-file (atomically) and then parks until SIGTERM, whose shutdown
// hook closes the node.

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.env.Environment;
import org.elasticsearch.http.HttpServerTransport;
import org.elasticsearch.node.InternalSettingsPreparer;
import org.elasticsearch.node.Node;
import org.elasticsearch.plugins.PluginsLoader;

public final class LocalNode {
    private LocalNode() {}

    private static void usage(String message) {
        System.err.println("LocalNode: " + message);
        System.err.println("usage: LocalNode --base DIR --conf DIR --data DIR --logs DIR --modules DIR"
                + " --ready-file FILE [-E key=value]...");
        System.exit(2);
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> paths = new LinkedHashMap<>();
        Settings.Builder settings = Settings.builder();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (i + 1 >= args.length) usage("missing value after " + a);
            String v = args[++i];
            switch (a) {
                case "--base": case "--conf": case "--data": case "--logs": case "--modules":
                case "--ready-file":
                    paths.put(a, v);
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
        for (String k : new String[] {"--base", "--conf", "--data", "--logs", "--modules", "--ready-file"}) {
            if (!paths.containsKey(k)) usage(k + " is required");
        }
        settings.put("path.home", paths.get("--base"));
        settings.put("path.data", paths.get("--data"));
        settings.put("path.logs", paths.get("--logs"));

        try {
            // The logging provider first: the server's classes log from their static initializers.
            LogConfigurator.configureESLogging();
            Settings initial = settings.build();
            String nodeName = initial.get("node.name", "local-1");
            Environment env = InternalSettingsPreparer.prepareEnvironment(
                    initial, Map.of(), Paths.get(paths.get("--conf")), () -> nodeName);
            // true: keep the console appender (the node's output is D/node.log).
            LogConfigurator.configure(env, true);
            // The server runs from the classpath, not as a named module: no qualified exports.
            PluginsLoader plugins = PluginsLoader.createPluginsLoader(
                    PluginsLoader.loadModulesBundles(Paths.get(paths.get("--modules"))), Set.of(), Map.of(), false);
            Node node = new Node(env, plugins);
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try {
                    node.close();
                    node.awaitClose(20, TimeUnit.SECONDS);
                } catch (Exception e) {
                    e.printStackTrace();
                }
            }, "local-node-shutdown"));
            node.start();
            int port = node.injector().getInstance(HttpServerTransport.class).boundAddress().publishAddress().getPort();

            Path ready = Paths.get(paths.get("--ready-file"));
            Path tmp = ready.resolveSibling(ready.getFileName() + ".tmp");
            String line = ProcessHandle.current().pid() + " " + port + "\n";
            Files.write(tmp, line.getBytes(StandardCharsets.US_ASCII));
            Files.move(tmp, ready, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            System.out.println("LocalNode: ready on http://127.0.0.1:" + port);
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
