import Foundation
import NetsimCore
import NetsimLoopback
import Testing
@testable import NetsimService

/// A proxy's upstream name need not resolve when the proxy is made (Toxiproxy resolves per
/// connection): `/populate` in a compose file often runs before the service it names is up.
@Suite("Toxiproxy API: upstream names")
struct ToxiproxyAPIUpstreamTests {
    @Test func aProxyToANameThatDoesNotResolveYetIsCreatedAndItsConnectionsFail() async throws {
        try await ToxiproxyAPITests.withAPI { api, _ in
            // RFC 6761: `.invalid` never resolves.
            let made = await api.handle(APIRequest(method: "POST", uri: "/proxies",
                                                   json: #"{"name":"later","listen":"127.0.0.1:0","upstream":"not-up-yet.invalid:5432"}"#))
            #expect(made.status == 201, "\(made)")
            let listen = try #require(ToxiproxyAPITests.proxy(made)?.listen)
            let outcome = try await offload { () -> String in
                let socket = try BlockingSocket.connect(to: Endpoint(parsing: listen))
                defer { socket.close() }
                do {
                    let bytes = try socket.receive(timeout: .seconds(30))
                    return bytes.isEmpty ? "eof" : "data"
                } catch let failure as SocketFailure { return "\(failure)" }
            }
            #expect(outcome == "eof" || outcome == SocketFailure.reset.description, "the client's connection ends: \(outcome)")
        }
    }
}
