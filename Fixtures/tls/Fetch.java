// A Java client for netsim's TLS tests: fetches each URL with java.net.http (HTTP/2 preferred,
// the JDK's default trust manager and hostname verification) and prints "<status> <version>"
// per URL. Trust comes from -Djavax.net.ssl.trustStore; nothing here turns verification off.
// Run: java -Djavax.net.ssl.trustStore=ts.p12 -Djavax.net.ssl.trustStorePassword=netsim Fetch.java URL...
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

public class Fetch {
    public static void main(String[] args) throws Exception {
        HttpClient client = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_2)
            .connectTimeout(Duration.ofSeconds(10))
            .build();
        for (String url : args) {
            HttpRequest request = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(20)).build();
            HttpResponse<byte[]> response = client.send(request, HttpResponse.BodyHandlers.ofByteArray());
            System.out.println(response.statusCode() + " " + response.version() + " " + response.body().length);
        }
    }
}
