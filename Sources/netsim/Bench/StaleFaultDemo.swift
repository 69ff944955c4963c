#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import NetsimCore
import NetsimLoopback
import NetsimRelay

/// The second half of `netsim demo`: a keep-alive connection goes stale (a phone's lock screen,
/// a NAT mapping timing out) and the app's next request on it is answered with a reset.
enum StaleFaultDemo {
    static let size = 1000

    /// Runs the steps, printing as it goes; returns what did not behave as expected.
    static func run(serverPort: Int) async throws -> [String] {
        print("""
            Second: the lock-screen fault. A phone keeps an HTTP connection open; the screen locks, the radio sleeps,
            the carrier's NAT forgets the mapping. The connection still looks open to the app, but its next request
            is answered with a reset. netsim's fault for it is stale=rst.

            """)
        let relay = Relay(configuration: RelayConfiguration(upstream: Endpoint(host: "127.0.0.1", port: serverPort)))
        let result = await Result { try await steps(relay) }
        await relay.stop()
        return try result.get()
    }

    private static func steps(_ relay: Relay) async throws -> [String] {
        var problems: [String] = []
        let port = try await relay.start().port
        let log = relay.eventLog

        // 1. A keep-alive connection works.
        let kept = try await offload { try MiniHTTP.Client(port: port) }
        defer { kept.close() }
        let first = try await offload { try kept.get(size) }
        print("1. connect through the relay (127.0.0.1:\(port)) and GET /\(size) → \(first.bodyBytes) bytes in \(DemoCommand.time(first.total))")
        if first.bodyBytes != size { problems.append("the first request returned \(first.bodyBytes) bytes") }
        let keptID = log.events.compactMap { event -> ConnectionID? in
            if case .opened = event.kind { return event.connection }
            return nil
        }.first

        // 2. The screen locks.
        _ = try await relay.addFault(FaultRule(.stale(.rst), target: .existing))
        let applied = await log.waitFor(timeout: .seconds(2)) { event in
            if event.connection == keptID, case .faultFired(let fault, _) = event.kind { return fault == "stale" }
            return false
        }
        print("2. the screen locks: relay.addFault(FaultRule(.stale(.rst), target: .existing))")
        if applied == nil { problems.append("the stale fault was not applied to connection \(keptID.map { "\($0)" } ?? "?") within 2 s") }

        // 3. The next request on the same connection.
        let second = await Result { try await offload { try kept.get(size) } }
        switch second {
        case .failure(SocketFailure.reset):
            print("3. the app sends GET /\(size) on the same connection → recv(2) fails: \(String(cString: strerror(ECONNRESET))) (ECONNRESET)")
        case .failure(let error):
            print("3. the app sends GET /\(size) on the same connection → \(error)")
            problems.append("the request on the stale connection failed with \(error), not ECONNRESET")
        case .success(let timing):
            print("3. the app sends GET /\(size) on the same connection → \(timing.bodyBytes) bytes (it should have been reset)")
            problems.append("the request on the stale connection succeeded")
        }

        // 4. A fresh connection works: only connections open when the fault fired are dead.
        let fresh = await Result {
            try await offload { () -> MiniHTTP.Timing in
                let client = try MiniHTTP.Client(port: port)
                defer { client.close() }
                return try client.get(size)
            }
        }
        switch fresh {
        case .success(let timing) where timing.bodyBytes == size:
            print("4. the app reconnects and retries → \(timing.bodyBytes) bytes in \(DemoCommand.time(timing.total)): new connections work")
        case .success(let timing):
            print("4. the app reconnects and retries → \(timing.bodyBytes) bytes")
            problems.append("the fresh connection returned \(timing.bodyBytes) bytes")
        case .failure(let error):
            print("4. the app reconnects and retries → \(error)")
            problems.append("the fresh connection failed: \(error)")
        }

        // 5. The relay's own account, once both connections have closed.
        _ = await log.waitFor(timeout: .seconds(3)) { _ in
            log.events.filter { if case .closed = $0.kind { return true } else { return false } }.count >= 2
        }
        print("\nThe relay's event log for these connections (what `netsim relay --events -` prints):")
        for event in log.events where event.connection != nil || isFault(event) {
            print("  " + event.jsonLine)
        }
        let resetClose = log.events.contains { event in
            if event.connection == keptID, case .closed(_, let how, _, _) = event.kind { return how == .rst }
            return false
        }
        if !resetClose { problems.append("the event log does not show connection \(keptID.map { "\($0)" } ?? "?") closed with a reset") }
        return problems
    }

    private static func isFault(_ event: Event) -> Bool {
        switch event.kind {
        case .faultAdded, .faultFired: return true
        default: return false
        }
    }
}
