import Foundation
import NetsimCore
import NetsimHTTP
import NetsimLoopback
import NetsimTLS
import Testing

/// The built-in upstream over TLS, with HTTP/1.1 and h2 by ALPN, reached by real clients that
/// trust netsim's CA as a normal chain: curl (libcurl + OpenSSL + nghttp2), Python's ssl in
/// strict X.509 mode, and Java's java.net.http.
@Suite struct BuiltinServerTLSTests {
    static let routes = [
        HTTPRoute(path: "/hello", body: .text("hello over tls")),
        HTTPRoute(path: "/big", body: .generated(bytes: 300_000)),
        HTTPRoute(path: "/chunked", body: .generated(bytes: 50_000), chunked: true),
        HTTPRoute(path: "/slow", status: 202, headers: [HTTPHeader("X-Route", "slow")], body: .text("late"), delay: .milliseconds(200)),
    ]
    let files = TLSTestFiles()

    func startServer(protocols: [ApplicationProtocol] = [.http2, .http1], idleTimeout: Duration? = nil) async throws -> (BuiltinServer, Endpoint) {
        let server = BuiltinServer(routes: Self.routes, idleTimeout: idleTimeout,
                                   transport: try .tls(authority: files.authority, protocols: protocols))
        return (server, try await server.start())
    }

    @Test func curlGetsH2WithStreamsOnOneConnectionAndEveryRouteFeature() async throws {
        let (server, endpoint) = try await startServer()
        defer { Task { await server.stop() } }
        let base = "https://localhost:\(endpoint.port)"
        let result = try await curl(["--http2", "\(base)/hello", "\(base)/big", "\(base)/chunked", "\(base)/slow"])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.split(separator: "\n") == ["2 200 14", "2 200 300000", "2 200 50000", "2 202 4"])
        let seen = server.requests
        #expect(seen.map(\.version) == Array(repeating: .http2, count: 4))
        #expect(seen.map(\.stream) == [1, 3, 5, 7])
        #expect(seen.map(\.connection) == [1, 1, 1, 1])
        #expect(seen.map(\.reusedConnection) == [false, true, true, true])
    }

    @Test func curlGetsHTTP1WhenItAsksForIt() async throws {
        let (server, endpoint) = try await startServer()
        defer { Task { await server.stop() } }
        let result = try await curl(["--http1.1", "https://127.0.0.1:\(endpoint.port)/hello", "https://127.0.0.1:\(endpoint.port)/chunked"])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.split(separator: "\n") == ["1.1 200 14", "1.1 200 50000"])
        #expect(server.requests.map(\.stream) == [nil, nil])
        #expect(server.requests.map(\.version) == [.http1_1, .http1_1])
    }

    @Test func aServerOfferingOnlyHTTP1AnswersAnH2ClientInHTTP1() async throws {
        let (server, endpoint) = try await startServer(protocols: [.http1])
        defer { Task { await server.stop() } }
        let result = try await curl(["--http2", "https://localhost:\(endpoint.port)/hello"])
        #expect(result.standardOutput == "1.1 200 14\n", "\(result.standardError)")
    }

    @Test func aNameFromSNIGetsItsOwnLeafAndAClientWithoutTheCARefusesIt() async throws {
        let (server, endpoint) = try await startServer()
        defer { Task { await server.stop() } }
        let url = "https://api.example.test:\(endpoint.port)/hello"
        let resolve = ["--resolve", "api.example.test:\(endpoint.port):127.0.0.1"]
        let trusted = try await curl(resolve + [url])
        #expect(trusted.standardOutput == "2 200 14\n", "\(trusted.standardError)")
        let untrusted = try await curl(resolve + [url], trustingCA: false)
        #expect(untrusted.status == 60, "curl without the CA: \(untrusted.standardError)")   // CURLE_PEER_FAILED_VERIFICATION
    }

    @Test func pythonSSLInStrictModeAcceptsTheChain() async throws {
        let (server, endpoint) = try await startServer(protocols: [.http1])
        defer { Task { await server.stop() } }
        let script = """
            import socket, ssl, sys
            ctx = ssl.create_default_context(cafile=sys.argv[1])
            ctx.verify_flags |= ssl.VERIFY_X509_STRICT
            for name in ["api.example.test", "localhost", "127.0.0.1"]:
                with socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=10) as raw:
                    with ctx.wrap_socket(raw, server_hostname=name) as tls:
                        tls.sendall(b"GET /hello HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n")
                        data = b""
                        while chunk := tls.recv(65536):
                            data += chunk
                        print(name, tls.version(), data.split(b"\\r\\n")[0].decode())
            """
        let result = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"),
                                              ["python3", "-c", script, files.caFile, String(endpoint.port)]).result(within: .seconds(30))
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.split(separator: "\n").map { String($0) } == [
            "api.example.test TLSv1.3 HTTP/1.1 200 OK", "localhost TLSv1.3 HTTP/1.1 200 OK", "127.0.0.1 TLSv1.3 HTTP/1.1 200 OK",
        ])
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/java") || ProcessInfo.processInfo.environment["CI"] != nil))
    func javaTrustsTheCAFromATrustStoreAndSpeaksH2() async throws {
        let (server, endpoint) = try await startServer()
        defer { Task { await server.stop() } }
        let store = files.path("truststore.p12")
        let keytool = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"), [
            "keytool", "-importcert", "-noprompt", "-alias", "netsim", "-file", files.caFile,
            "-keystore", store, "-storetype", "PKCS12", "-storepass", "netsim",
        ]).result(within: .seconds(60))
        #expect(keytool.status == 0, "\(keytool.standardError)")
        let fetch = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/tls/Fetch.java").path
        let java = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"), [
            "java", "-Djavax.net.ssl.trustStore=\(store)", "-Djavax.net.ssl.trustStorePassword=netsim", fetch,
            "https://localhost:\(endpoint.port)/hello", "https://localhost:\(endpoint.port)/big",
        ]).result(within: .seconds(120))
        #expect(java.status == 0, "\(java.standardError)")
        #expect(java.standardOutput.split(separator: "\n") == ["200 HTTP_2 14", "200 HTTP_2 300000"])
    }

    /// curl through the test's CA; prints `<http version> <status> <body bytes>` per URL.
    func curl(_ arguments: [String], trustingCA: Bool = true) async throws -> WatchedProcess.Result {
        let trust = trustingCA ? ["--cacert", files.caFile] : []
        // Every URL's body to /dev/null (curl takes one -o per URL).
        let discard = arguments.filter { $0.hasPrefix("https://") }.flatMap { _ in ["-o", "/dev/null"] }
        return try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"), [
            "curl", "-sS", "--max-time", "20", "-w", "%{http_version} %{http_code} %{size_download}\\n",
        ] + trust + discard + arguments).result(within: .seconds(30))
    }
}

/// An ephemeral CA and a directory for its files, removed when the test ends.
final class TLSTestFiles: @unchecked Sendable {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-tls-\(UUID().uuidString)")
    let authority: CertificateAuthority
    let caFile: String

    init() {
        try? FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        authority = try! CertificateAuthority.ephemeral()
        caFile = root.appendingPathComponent("ca.pem").path
        try! (try! authority.pem).write(toFile: caFile, atomically: true, encoding: .utf8)
    }

    deinit { try? FileManager.default.removeItem(at: root) }

    func path(_ name: String) -> String { root.appendingPathComponent(name).path }
}
