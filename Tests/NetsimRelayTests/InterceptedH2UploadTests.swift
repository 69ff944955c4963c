import Foundation
import NetsimCore
import NetsimLoopback
import NetsimRelay
import NetsimTLS
import Testing

/// An h2 upload through interception to a server that acknowledges the body with stream
/// WINDOW_UPDATEs (Node's does, the last after the request's END_STREAM). They were forwarded to
/// the client's stream, where a WINDOW_UPDATE after the client's END_STREAM is a protocol error,
/// and the client's connection was closed before the answer (QA 53: curl's "stream 1 was not
/// closed cleanly" for 1 MB at 800 KB/s). Each side's flow control is its own connection's.
@Suite("TLS interception: h2 uploads")
struct InterceptedH2UploadTests {
    /// An h2 server in Node (`ci/setup` installs nodejs) answering each request with the body's
    /// length, once it has all of it.
    static let server = """
        const http2 = require('http2'), fs = require('fs');
        const srv = http2.createSecureServer({ key: fs.readFileSync(process.argv[2]), cert: fs.readFileSync(process.argv[3]) }, (req, res) => {
          let n = 0;
          req.on('data', d => { n += d.length; });
          req.on('end', () => res.end('got ' + n + '\\n'));
        });
        srv.listen(0, '127.0.0.1', () => console.log(srv.address().port));
        """

    @Test func aPacedUploadGetsItsAnswer() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-h2-upload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let authority = try CertificateAuthority.ephemeral()
        let leaf = try authority.issue(names: ServerName.loopback, notBefore: Date() - 3600, notAfter: Date() + 3600)
        let path = { (name: String) in folder.appendingPathComponent(name).path }
        let (key, cert, ca, script, body) = (path("key.pem"), path("cert.pem"), path("ca.pem"), path("server.js"), path("upload.bin"))
        FileManager.default.createFile(atPath: key, contents: Data(leaf.privateKey.pemRepresentation.utf8), attributes: [.posixPermissions: 0o600])
        try (try leaf.leaf.serializeAsPEM().pemString).write(toFile: cert, atomically: true, encoding: .utf8)
        try (try authority.pem).write(toFile: ca, atomically: true, encoding: .utf8)
        try Self.server.write(toFile: script, atomically: true, encoding: .utf8)
        try Data(repeating: 0x5A, count: 1 << 20).write(to: URL(fileURLWithPath: body))

        let node = try WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"), ["node", script, key, cert])
        defer { node.terminate() }
        let port = try #require(await node.nextLine(within: .seconds(30)).flatMap { Int($0) }, "node did not start: \(node.text(.error))")
        let relay = Relay(configuration: RelayConfiguration(
            upstream: Endpoint(host: "localhost", port: port), observeHTTP: true,
            tls: try TLSInterception(authority: authority, upstreamTrust: .authority(authority))))
        let endpoint = try await relay.start()
        let curl = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"), [
            "curl", "-sS", "--max-time", "30", "--cacert", ca, "--http2", "--limit-rate", "800K",
            "--data-binary", "@\(body)", "https://localhost:\(endpoint.port)/upload",
        ]).result(within: .seconds(40))
        await relay.stop()
        #expect(curl.status == 0 && curl.standardOutput == "got 1048576\n", "curl: \(curl.status) \(curl.standardOutput) \(curl.standardError)")
    }
}
