import ArgumentParser
import Foundation
import NetsimCore
import NetsimLoopback
import NetsimLink
import NetsimRelay

/// `netsim demo`: a self-contained tour. A 100 KB download over four links, then the lock-screen
/// fault on a keep-alive connection. Needs nothing but this binary; about 10 seconds.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "A self-contained tour: a download over LTE, 3G and EDGE, and a connection killed by a lock screen.",
        discussion: """
            Starts a small HTTP server on 127.0.0.1, fetches 100 KB directly and through netsim's relay \
            with the lte, 3g and edge profiles, then shows what a client sees when a keep-alive \
            connection goes stale (stale=rst). Exits 0 when everything behaved as expected.
            """)

    static let bodySize = 100_000
    static let profiles = ["lte", "3g", "edge"]

    func run() async throws {
        let server = try BenchServer(handler: MiniHTTP.serve)
        defer { server.stop() }
        var problems: [String] = []

        print("""
            netsim demo

            An HTTP server on 127.0.0.1:\(server.port) answers GET /N with N bytes. netsim's relay sits between a
            client and that server and makes the link slow or broken on purpose. First: one 100 KB download over
            a fresh connection, directly and through the relay with three of Apple's Network Link Conditioner
            profiles (down / up):

            """)
        for name in Self.profiles {
            guard let profile = LinkProfile.named(name) else { continue }
            let down = profile.link.down, up = profile.link.up
            let rates = "\(down.bandwidth?.description ?? "unlimited") / \(up.bandwidth?.description ?? "unlimited")"
            let delays = "\(down.latency.compactDescription) / \(up.latency.compactDescription) delay"
            print("  \(name.padding(toLength: 5, withPad: " ", startingAt: 0)) \(rates), \(delays) (\(profile.summary))")
        }
        print("")

        var rows: [[String]] = []
        var previousTotal: Int64 = 0
        for name in ["direct"] + Self.profiles {
            let profile = LinkProfile.named(name)
            printStatus("netsim demo: fetching 100 KB over \(name)…")
            let (connect, timing) = try await fetch(serverPort: server.port, link: profile?.link)
            let seconds = Double(timing.total + connect) / 1e9
            let rate = Double(timing.bodyBytes * 8) / seconds
            rows.append([name, Self.time(connect), Self.time(timing.firstByte + connect), Self.time(timing.total + connect), Format.rate(bitsPerSecond: rate)])
            if timing.bodyBytes != Self.bodySize {
                problems.append("\(name): received \(timing.bodyBytes) bytes instead of \(Self.bodySize)")
            }
            if let link = profile?.link {
                problems += Self.check(name, link: link, connect: connect, timing: timing)
            }
            if timing.total + connect < previousTotal {
                problems.append("\(name) was faster than the link before it in the table")
            }
            previousTotal = timing.total + connect
        }
        print(renderTable(header: ["link", "connect", "first byte", "total", "effective rate"], rows: rows))
        print("""

            connect:    connect(2) returns as soon as the relay's kernel accepts, so it is fast on every link;
                        the relay pays the link's handshake (a round trip) before the request goes on.
            first byte: two round trips (the handshake's, then the request's: 2 × (up delay + down delay))
                        + the server's answer.
            total:      the first byte plus 100 KB at the profile's down rate.

            """)

        problems += try await StaleFaultDemo.run(serverPort: server.port)

        if problems.isEmpty {
            print("\nEverything behaved as expected. Next: `netsim relay --help`, `netsim profiles`, `netsim bench`.")
        } else {
            print("")
            for problem in problems { print("UNEXPECTED: \(problem)") }
            throw RuntimeError("the demo did not behave as expected (\(problems.count) problem\(problems.count == 1 ? "" : "s") above)")
        }
    }

    /// One download over a fresh connection, directly (`link` nil) or through a relay with `link`.
    private func fetch(serverPort: Int, link: LinkConfiguration?) async throws -> (connect: Int64, timing: MiniHTTP.Timing) {
        guard let link else {
            return try await offload { try Self.download(port: serverPort) }
        }
        let relay = Relay(configuration: RelayConfiguration(upstream: Endpoint(host: "127.0.0.1", port: serverPort), link: link))
        let result = await Result {
            let port = try await relay.start().port
            return try await offload { try Self.download(port: port) }
        }
        await relay.stop()
        return try result.get()
    }

    private static func download(port: Int) throws -> (connect: Int64, timing: MiniHTTP.Timing) {
        let client = try MiniHTTP.Client(port: port)
        defer { client.close() }
        return (client.connectNanoseconds, try client.get(bodySize))
    }

    /// What the link model says the download must take, as problems if it did not.
    private static func check(_ name: String, link: LinkConfiguration, connect: Int64, timing: MiniHTTP.Timing) -> [String] {
        var problems: [String] = []
        // Two round trips: the handshake the relay pays, then the request and its answer.
        let delay = 2 * (link.up.latency.nanoseconds + link.down.latency.nanoseconds)
        if timing.firstByte < delay - 1_000_000 {
            problems.append("\(name): first byte after \(time(timing.firstByte)), before the \(time(delay)) two round trips of the link add up to")
        }
        if let rate = link.down.bandwidth?.bytesPerSecond {
            let transfer = Int64(Double(bodySize) / rate * 1e9)
            let least = delay + transfer * 9 / 10
            let most = (delay + transfer) * 13 / 10 + 100_000_000
            if timing.total < least || timing.total > most {
                problems.append("\(name): took \(time(timing.total)); the link model allows \(time(least))…\(time(most))")
            }
        }
        return problems
    }

    /// `0.1 ms`, `215.3 ms`, `3.52 s`.
    static func time(_ nanoseconds: Int64) -> String {
        nanoseconds < 1_000_000_000
            ? Format.fixed(Double(nanoseconds) / 1e6, 1) + " ms"
            : Format.fixed(Double(nanoseconds) / 1e9, 2) + " s"
    }
}
