import Foundation
import NetsimCore
import NetsimHTTP
import NetsimLoopback
import NetsimRunner
import NetsimScenario
import NetsimTLS
import Testing

/// Scenarios whose built-in upstream speaks TLS (h2 and HTTP/1.1 by ALPN) through the relay:
/// clients given netsim's CA negotiate as with any HTTPS server, a client that was not given it
/// fails with error kind `tls`, and `--pcap` writes the session secrets that decrypt the capture.
@Suite("TLS scenarios", .serialized)
final class TLSScenarioTests {
    static let source = """
        name: https-feed
        description: four downloads over HTTPS, two at a time
        seed: 3
        upstream:
          tls: true
          http: [h2, http/1.1]
          routes:
            - path: /feed
              body_bytes: 20000
        client:
          driver: exec
          command: [python3, Fixtures/clients/urllib3_client.py]
          timeout: 5s
          pool: 2
        timeline:
          - at: 0s
            request: feed
            path: /feed
            count: 4
            parallel: 2
        expect:
          - request: feed
            status: 200
            error: none
        """

    /// A `NETSIM_HOME` of the test's own, so runs never touch the user's CA.
    let home = NetsimHome(directory: FileManager.default.temporaryDirectory.appendingPathComponent("netsim-home-\(UUID().uuidString)"))

    deinit { try? FileManager.default.removeItem(at: home.directory) }

    func runHTTPS(_ driver: String, pcap: String? = nil) async throws -> RunResult {
        let parsed = try scenario(Self.source, file: "https-feed.scn")
        return try await ScenarioRunner.run(parsed, options: RunOptions(driver: driver, workingDirectory: repositoryRoot, pcapPath: pcap, netsimHome: home))
    }

    @Test func urllib3GivenTheCASpeaksHTTP1OverTLS() async throws {
        let result = try await runHTTPS("exec")
        #expect(result.passed, "\(TextReport.render(result))")
        #expect(result.serverRequests.count == 4)
        #expect(result.serverRequests.allSatisfy { $0.version == .http1_1 && $0.stream == nil })
        #expect(FileManager.default.fileExists(atPath: home.caCertificate.path))
    }

    @Test func asyncHTTPClientGivenTheCANegotiatesH2() async throws {
        let result = try await runHTTPS("async-http-client")
        #expect(result.passed, "\(TextReport.render(result))")
        #expect(result.serverRequests.allSatisfy { $0.version == .http2 && $0.stream != nil }, "\(result.serverRequests)")
        // One connection carries the streams: h2 multiplexes where HTTP/1.1 would pool.
        #expect(Set(result.serverRequests.map(\.connection)).count == 1)
    }

    /// The reference clients offer h2 and share one connection per origin: the two requests that
    /// start together wait for one connect instead of opening two.
    @Test(arguments: ["naive", "resilient"])
    func theReferenceClientsNegotiateH2AndShareOneConnection(driver: String) async throws {
        let result = try await runHTTPS(driver)
        #expect(result.passed, "\(TextReport.render(result))")
        #expect(result.serverRequests.count == 4)
        #expect(result.serverRequests.allSatisfy { $0.version == .http2 && $0.stream != nil }, "\(result.serverRequests)")
        #expect(Set(result.serverRequests.map(\.connection)).count == 1, "\(result.serverRequests)")
    }

    /// FoundationNetworking on Linux takes no CA (docs/tls.md): it is the client "not given the
    /// CA", and must fail as a correct client does — with `tls`, never with an answer.
    @Test func aClientNotGivenTheCAFailsWithErrorKindTLS() async throws {
        let result = try await runHTTPS("urlsession")
        #expect(!result.passed)
        #expect(result.outcomes.allSatisfy { $0.response.error == .tls }, "\(TextReport.render(result))")
        #expect(result.serverRequests.isEmpty)
        // The report says why: it was a bare libcurl message, read as the client's failure.
        #expect(result.outcomes.allSatisfy { $0.response.errorMessage?.contains("netsim's CA is not in it") == true }, "\(TextReport.render(result))")
    }

    @Test func thePcapAndItsKeysShowEveryRequestInTshark() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-tls-pcap-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let pcap = folder.appendingPathComponent("run.pcap").path
        let keys = folder.appendingPathComponent("run.keys").path
        let result = try await runHTTPS("async-http-client", pcap: pcap)
        #expect(result.passed, "\(TextReport.render(result))")
        let mode = (try FileManager.default.attributesOfItem(atPath: keys)[.posixPermissions] as? NSNumber)?.intValue
        #expect(mode == 0o600)
        let decrypted = try await tshark(pcap, keys: keys, filter: "http2.type == 1 && http2.headers.path")
        // Each request's HEADERS, seen on both legs of the relay (tshark prints frames that share
        // a packet on one line, comma-separated).
        #expect(decrypted.components(separatedBy: "/feed").count - 1 == 8, "\(decrypted)")
        let withoutKeys = try await tshark(pcap, keys: nil, filter: "http2.type == 1 && http2.headers.path")
        #expect(withoutKeys.isEmpty)
    }

    /// The lock-screen incident through an intercepting relay: the stale fault acts on the client's
    /// TCP connections (encrypted bytes), request tags are read inside TLS, and the reference
    /// clients behave as in plaintext — naive reuses a dead connection, resilient recovers. The
    /// upstream offers only HTTP/1.1, so the clients (which offer h2 first) fall back to it by
    /// ALPN and keep a pool of connections, as the plaintext scenario's checks expect.
    @Test(arguments: [("naive", false), ("resilient", true)])
    func lockscreenThroughInterceptionJudgesTheClientsAsInPlaintext(driver: String, passes: Bool) async throws {
        var text = try String(contentsOfFile: repositoryRoot + "/Scenarios/lockscreen.scn", encoding: .utf8)
        text = text.replacingOccurrences(of: "upstream:\n", with: "upstream:\n  tls: true\n  http: [http/1.1]\n")
            .replacingOccurrences(of: "  profile: lte\n", with: "  profile: lte\n  tls: intercept\n")
        let parsed = try scenario(text, file: "lockscreen-intercept.scn")
        #expect(parsed.interceptTLS && parsed.scheme == "https")
        let result = try await ScenarioRunner.run(parsed, options: RunOptions(driver: driver, workingDirectory: repositoryRoot, netsimHome: home))
        #expect(result.passed == passes, "\(TextReport.render(result))")
        if !passes {
            #expect(result.outcomes.contains { $0.name == "after-unlock" && $0.response.error == .reset }, "\(TextReport.render(result))")
        }
        // Requests were seen inside TLS, tagged: the warm-up's eight at least (a request written
        // into a dead connection is reset on the wire and never reaches the HTTP layer).
        let tagged = result.events.filter { if case .httpRequest(_, _, _, _, let tag, _, _) = $0.kind { tag != nil } else { false } }
        #expect(tagged.count >= 8)
    }

    func tshark(_ pcap: String, keys: String?, filter: String) async throws -> String {
        let options = keys.map { ["-o", "tls.keylog_file:\($0)"] } ?? []
        let result = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"),
                                              ["tshark", "-r", pcap] + options + ["-Y", filter, "-T", "fields", "-e", "http2.headers.path"])
            .result(within: .seconds(60))
        #expect(result.status == 0, "\(result.standardError)")
        return result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
