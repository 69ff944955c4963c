import NIOCore
import NIOPosix
import NetsimLoopback
import NetsimRelay
import Testing

/// Socket failures in words: the relay's bind errors and the proxy's 502 bodies showed NIO's
/// signatures and type names, and called a refused connect a "reset".
@Suite("socket failures in words")
struct SocketFailureTextTests {
    @Test func aBusyPortARefusedConnectAndAnUnknownNameSayWhatHappened() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let first = try await ServerBootstrap(group: group).bind(host: "127.0.0.1", port: 0).get()
        let port = first.localAddress!.port!
        do {
            let busy = await Result(catching: { try await ServerBootstrap(group: group).bind(host: "127.0.0.1", port: port).get() })
            #expect(busy.failureText?.hasPrefix("address already in use") == true, "\(busy.failureText ?? "bound")")
            try await first.close()
            // A port bound and not listening (a closed one may be handed to another test's server).
            let refusing = try RefusingPort()
            let refused = await Result(catching: { try await ClientBootstrap(group: group).connect(host: "127.0.0.1", port: refusing.port).get() })
            #expect(refused.failureText?.hasPrefix("connection refused") == true, "\(refused.failureText ?? "connected")")
            let unknown = await Result(catching: { try await ClientBootstrap(group: group).connect(host: "no-such-host.invalid", port: 80).get() })
            #expect(unknown.failureText?.hasPrefix("the name no-such-host.invalid does not resolve") == true, "\(unknown.failureText ?? "connected")")
            // The event log says it so too (QA 67: NIO's `DNS error: SocketAddressError.UnknownHost: …`).
            if case .failure(let error) = unknown {
                let (reason, detail) = SocketFailureText.classify(error)
                #expect(reason == .other && detail.hasPrefix("the name no-such-host.invalid does not resolve"), "\(detail)")
            }
        } catch {
            Issue.record("\(error)")
        }
        try await group.shutdownGracefully()
    }

    /// An upstream connect that failed for want of descriptors, in the event log's words (QA 39:
    /// `socket(domain:type:protocolSubtype:): Too many open files) (errno: 24)`).
    @Test func anUpstreamFailureIsLoggedInWords() {
        let (reason, detail) = SocketFailureText.classify(IOError(errnoCode: EMFILE, reason: "socket(domain:type:protocolSubtype:)"))
        #expect(reason == .other)
        #expect(detail == "too many open files (errno 24)")
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }

    var failureText: String? {
        if case .failure(let error) = self { return SocketFailureText.describe(error) }
        return nil
    }
}
