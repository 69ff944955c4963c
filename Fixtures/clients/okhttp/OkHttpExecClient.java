import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.InterruptedIOException;
import java.io.PrintStream;
import java.net.ConnectException;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.security.KeyStore;
import java.security.MessageDigest;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.Connection;
import okhttp3.ConnectionPool;
import okhttp3.EventListener;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import okhttp3.internal.Version;
import okhttp3.internal.http.HttpMethod;

/**
 * netsim exec client: OkHttp (Debian's libokhttp-java 3.13.1 with okio 1.16), `--client okhttp`
 * (docs/drivers.md, exec protocol 1). Compiled by Fixtures/clients/okhttp_client.sh (and ci/setup).
 *
 * <p>ONE OkHttpClient for the process (one ConnectionPool, one Dispatcher); each request is an
 * asynchronous call (Call.enqueue), as an Android app makes them, so OkHttp's own Dispatcher
 * limits apply (64 calls, 5 per host). OkHttp's defaults are kept (OkHttpClient.Builder:
 * connect/read/write timeouts 10 s, callTimeout 0 = none, ConnectionPool(5 idle, 5 minutes),
 * retryOnConnectionFailure true, redirects followed) and config maps by the protocol's rules:
 * <pre>
 *   timeout          -> callTimeout(timeout): OkHttp's total timeout (3.12+); the 10 s
 *                       connect/read/write timeouts stay as OkHttp's defaults
 *   connect_timeout  -> connectTimeout(...)
 *   pool             -> new ConnectionPool(pool, 5, MINUTES): idle connections kept
 *   retries          -> OkHttp has no count; 0 -> retryOnConnectionFailure(false), which
 *                       switches off its silent retry of a failed connection (a stale pooled
 *                       one, another route); any other number leaves it on (the default)
 * </pre>
 * The CA: the JVM reads no CA file from the environment, so when NETSIM_CA names netsim's CA
 * (a TLS scenario) the client trusts it through sslSocketFactory(…), as an app pinning its own
 * CA does; verification stays on.
 *
 * <p>local_port: EventListener.connectionAcquired gives each attempt's connection (reused or new),
 * so failed calls report it too.
 *
 * <p>Errors (Java has no errno: exception classes first, then the JDK's and OkHttp's fixed texts):
 * <pre>
 *   UnknownHostException                                   -> dns
 *   SSLException (SSLHandshakeException, SSLPeerUnverifiedException) -> tls
 *   ConnectException                                        -> refused
 *   SocketTimeoutException, InterruptedIOException "timeout" (callTimeout) -> timeout
 *   IOException "unexpected end of stream on …" before the head (Http1Codec.readResponseHeaders) -> closed-before-response
 *   SocketException "Connection reset", "Broken pipe"       -> reset
 *   anything else (ProtocolException, a body cut short)     -> other
 * </pre>
 */
public final class OkHttpExecClient {
    private static final PrintStream OUT = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    private static final Map<Call, Integer> PORTS = new ConcurrentHashMap<>();

    static void log(String text) {
        System.err.println("okhttp_client: " + text);
    }

    static void emit(Map<String, Object> message) {
        String line = Json.write(message);
        synchronized (OUT) {
            OUT.print(line + "\n");
            OUT.flush();
        }
    }

    static OkHttpClient makeClient(Map<String, Object> config) throws Exception {
        OkHttpClient.Builder builder = new OkHttpClient.Builder()
            .eventListener(new EventListener() {
                @Override public void connectionAcquired(Call call, Connection connection) {
                    PORTS.put(call, connection.socket().getLocalPort());
                }
            });
        if (config.get("timeout") instanceof Double) {
            builder.callTimeout(millis(config.get("timeout")), TimeUnit.MILLISECONDS);
        }
        if (config.get("connect_timeout") instanceof Double) {
            builder.connectTimeout(millis(config.get("connect_timeout")), TimeUnit.MILLISECONDS);
        }
        if (config.get("pool") instanceof Double) {
            builder.connectionPool(new ConnectionPool(((Double) config.get("pool")).intValue(), 5, TimeUnit.MINUTES));
        }
        if (config.get("retries") instanceof Double) {
            boolean retry = ((Double) config.get("retries")).intValue() != 0;
            builder.retryOnConnectionFailure(retry);
            log("retries=" + config.get("retries") + ": retryOnConnectionFailure(" + retry + ")");
        }
        String ca = System.getenv("NETSIM_CA");
        if (ca != null && !ca.isEmpty()) {
            X509TrustManager trust = trusting(ca);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, new javax.net.ssl.TrustManager[] {trust}, null);
            builder.sslSocketFactory(context.getSocketFactory(), trust);
        }
        Object settings = config.get("settings");
        if (settings instanceof Map && !((Map<?, ?>) settings).isEmpty()) {
            log("ignoring unknown settings: " + ((Map<?, ?>) settings).keySet());
        }
        OkHttpClient client = builder.build();
        log("OkHttpClient(callTimeout=" + client.callTimeoutMillis() + " ms, connectTimeout=" + client.connectTimeoutMillis()
            + " ms, readTimeout=" + client.readTimeoutMillis() + " ms, retryOnConnectionFailure=" + client.retryOnConnectionFailure() + ")");
        return client;
    }

    static long millis(Object seconds) {
        return Math.round((Double) seconds * 1000);
    }

    static X509TrustManager trusting(String pemFile) throws Exception {
        KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
        store.load(null, null);
        try (InputStream in = new FileInputStream(pemFile)) {
            int index = 0;
            for (Certificate certificate : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                store.setCertificateEntry("netsim-ca-" + index++, certificate);
            }
        }
        TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        factory.init(store);
        return (X509TrustManager) factory.getTrustManagers()[0];
    }

    static String errorKind(IOException error, boolean answered) {
        for (Throwable e = error; e != null; e = e.getCause()) {
            String message = String.valueOf(e.getMessage());
            if (e instanceof UnknownHostException) return "dns";
            if (e instanceof SSLException) return "tls";
            if (e instanceof ConnectException) return "refused";
            if (e instanceof SocketTimeoutException) return "timeout";
            if (e instanceof InterruptedIOException && message.equals("timeout")) return "timeout";
            if (!answered && message.startsWith("unexpected end of stream on ")) return "closed-before-response";
            if (e instanceof SocketException && (message.contains("Connection reset") || message.contains("Broken pipe"))) return "reset";
        }
        return "other";
    }

    static Map<String, Object> newAnswer(Object id) {
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("id", id);
        for (String field : new String[] {"status", "body_sha256", "body_length", "body", "error", "local_port", "elapsed"}) {
            answer.put(field, null);
        }
        answer.put("headers", new LinkedHashMap<String, Object>());
        return answer;
    }

    @SuppressWarnings("unchecked")
    static void perform(OkHttpClient client, Map<String, Object> message, long received, CountDownLatch done) {
        Object id = message.get("id") instanceof Double ? (Object) ((Double) message.get("id")).longValue() : message.get("id");
        Map<String, Object> answer = newAnswer(id);
        String method = message.get("method") instanceof String ? (String) message.get("method") : "GET";
        String body = message.get("body") instanceof String ? (String) message.get("body") : null;
        RequestBody requestBody = body != null ? RequestBody.create(null, body.getBytes(StandardCharsets.UTF_8))
            : HttpMethod.requiresRequestBody(method) ? RequestBody.create(null, new byte[0]) : null;
        Request.Builder request = new Request.Builder().url((String) message.get("url")).method(method, requestBody);
        if (message.get("headers") instanceof Map) {
            ((Map<String, Object>) message.get("headers")).forEach((name, value) -> request.header(name, String.valueOf(value)));
        }
        Call call = client.newCall(request.build());
        call.enqueue(new Callback() {
            @Override public void onFailure(Call call, IOException error) {
                finish(call, answer, error, false, received, done);
            }

            @Override public void onResponse(Call call, Response response) {
                try (Response r = response) {
                    byte[] data = r.body().bytes();
                    Map<String, Object> headers = (Map<String, Object>) answer.get("headers");
                    for (String name : r.headers().names()) {
                        headers.put(name.toLowerCase(), String.join(", ", r.headers(name)));
                    }
                    answer.put("status", r.code());
                    answer.put("body_sha256", hex(MessageDigest.getInstance("SHA-256").digest(data)));
                    answer.put("body_length", data.length);
                    answer.put("body", new String(data, 0, Math.min(data.length, 65536), StandardCharsets.UTF_8));
                    finish(call, answer, null, true, received, done);
                } catch (IOException error) {
                    answer.put("headers", new LinkedHashMap<String, Object>());
                    answer.put("status", null);
                    finish(call, answer, error, true, received, done);
                } catch (Exception bug) {
                    finish(call, answer, new IOException(bug), true, received, done);
                }
            }
        });
    }

    static void finish(Call call, Map<String, Object> answer, IOException error, boolean answered, long received, CountDownLatch done) {
        if (error != null) {
            Map<String, Object> kind = new LinkedHashMap<>();
            kind.put("kind", errorKind(error, answered));
            kind.put("message", error.getClass().getName() + ": " + error.getMessage()
                + (error.getCause() != null ? " (" + error.getCause() + ")" : ""));
            answer.put("error", kind);
            log("request " + answer.get("id") + " failed: " + kind.get("kind") + ": " + error);
        }
        answer.put("local_port", PORTS.remove(call));
        answer.put("elapsed", (System.nanoTime() - received) / 1e9);
        emit(answer);
        done.countDown();
    }

    static String hex(byte[] bytes) {
        StringBuilder out = new StringBuilder();
        for (byte b : bytes) out.append(String.format("%02x", b));
        return out.toString();
    }

    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Map<String, Object> config = new LinkedHashMap<>();
        String first = in.readLine();
        try {
            Object parsed = first == null ? null : Json.parse(first);
            if (parsed instanceof Map && "config".equals(((Map<String, Object>) parsed).get("type"))) {
                config = (Map<String, Object>) parsed;
            } else {
                log("first line is not a config: using OkHttp's defaults");
            }
        } catch (IllegalArgumentException error) {
            log("first line is not JSON (" + error.getMessage() + "): using OkHttp's defaults");
        }
        OkHttpClient client = makeClient(config); // built before hello: start-up is not scenario time
        Map<String, Object> hello = new LinkedHashMap<>();
        hello.put("type", "hello");
        hello.put("name", "okhttp");
        hello.put("version", Version.userAgent().replace("okhttp/", "") + " (Java " + System.getProperty("java.version") + ")");
        hello.put("protocol", 1);
        emit(hello);
        List<CountDownLatch> calls = new ArrayList<>();
        for (String line; (line = in.readLine()) != null; ) {
            long received = System.nanoTime();
            if (line.isBlank()) continue;
            Object parsed;
            try {
                parsed = Json.parse(line);
            } catch (IllegalArgumentException error) {
                log("not JSON, ignored: " + line + " (" + error.getMessage() + ")");
                continue;
            }
            if (!(parsed instanceof Map) || !"request".equals(((Map<String, Object>) parsed).get("type"))) {
                log("unexpected line, ignored: " + line);
                continue;
            }
            CountDownLatch done = new CountDownLatch(1);
            calls.add(done);
            perform(client, (Map<String, Object>) parsed, received, done);
        }
        for (CountDownLatch done : calls) done.await();
        client.dispatcher().executorService().shutdown();
        client.connectionPool().evictAll();
        System.exit(0);
    }
}
