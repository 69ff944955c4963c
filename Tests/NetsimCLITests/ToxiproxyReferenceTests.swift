import Foundation
import NetsimCore
import NetsimLoopback
import Testing
@testable import netsim

/// The bench's Toxiproxy client, driven against `netsim serve` started with toxiproxy-server's
/// own flags (a two-line shim): the API is Toxiproxy's, so what the bench does with a real
/// toxiproxy-server it does here — start it, read its version, make proxies with toxics.
@Suite("bench: the toxiproxy-server reference")
struct ToxiproxyReferenceTests {
    /// A `toxiproxy-server` that is netsim serve: `-host H -port P` become `--host H --port P`.
    static func standIn() throws -> (URL, cleanup: () -> Void) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-toxiproxy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let script = directory.appendingPathComponent("toxiproxy-server")
        try """
            #!/bin/sh
            while [ $# -gt 0 ]; do case "$1" in -host) host=$2; shift 2;; -port) port=$2; shift 2;; *) shift;; esac; done
            exec '\(NetsimProcess.executable.path)' serve --host "$host" --port "$port"

            """.write(to: script, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
        return (script, { try? FileManager.default.removeItem(at: directory) })
    }

    @Test func proxiesWithToxicsCarryTheStreamAndApplyThem() async throws {
        let (script, cleanup) = try Self.standIn()
        defer { cleanup() }
        let echo = try BenchServer(handler: ServerHandlers.echo)
        defer { echo.stop() }
        let answers = try BenchServer(handler: ServerHandlers.sizedAnswers)
        defer { answers.stop() }
        let (version, plain, delayed, slow) = try await offload { () -> (String, [UInt64], [UInt64], Int64) in
            // Bounds against hanging only: the parallel test run can stall everything for seconds.
            let reference = try ToxiproxyReference(executable: script.path, readyWithin: 60)
            defer { reference.stop() }
            func roundTrips(_ port: Int, count: Int) throws -> [UInt64] {
                let socket = try connectLoopback(port)
                defer { socket.close() }
                socket.setReceiveTimeout(.seconds(60))
                var rtts: [UInt64] = []
                try RoundTripBench.pingPong(socket, count: count) { rtts.append($0) }
                return rtts
            }
            let plain = try roundTrips(try reference.proxy(to: echo.port), count: 20)
            let delayed = try roundTrips(try reference.proxy(to: echo.port, toxics: [.latency(100, stream: "downstream")]), count: 3)
            // 4,000 bytes at 8 KB/s (Toxiproxy's KB are 1000 bytes) take at least 0.5 s.
            let slowPort = try reference.proxy(to: answers.port, toxics: [.bandwidth(kilobytesPerSecond: 8)])
            let slow = try BandwidthBench.downloads(port: slowPort, bytes: 4_000, repeats: 1)[0]
            return (reference.version, plain, delayed, slow)
        }
        #expect(!version.isEmpty)
        #expect(plain.count == 20)
        #expect(delayed.count == 3)
        #expect(delayed.allSatisfy { $0 >= 100_000_000 }, "round trips \(delayed) ns behind a 100 ms toxic")
        #expect(slow >= 500_000_000, "4,000 bytes at 8 KB/s came in \(slow) ns")
    }

    /// Another server on the port (taken between picking it and the child listening) is not
    /// taken for toxiproxy-server: CI's `POST /proxies` was answered 404 by another test's server.
    @Test func anotherServerOnThePortIsNotTakenForIt() throws {
        let other = try LoopbackServer { socket in
            _ = try? socket.receive(timeout: .seconds(5))
            try? socket.send("HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nno route\n")
            socket.close()
        }
        defer { other.stop() }
        #expect {
            _ = try ToxiproxyReference.version(port: other.endpoint.port, within: 5, while: { true })
        } throws: { error in
            "\(error)".contains("GET /version answered 404 (another server on the port?)")
        }
    }

    @Test func aBinaryThatNeverAnswersIsAnErrorNamingIt() async throws {
        let error = await #expect(throws: RuntimeError.self) {
            try await offload { _ = try ToxiproxyReference(executable: "/bin/true") }
        }
        #expect(error?.description.contains("/bin/true") == true)
    }

    /// Go's server chunks larger answers: every chunk's data is kept, in order; an answer cut
    /// before its last chunk, or before its Content-Length, is an error, not a shorter body.
    @Test func aChunkedAnswerIsReadWhole() throws {
        let chunked = Array("HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n7\r\n{\"a\": 1\r\n3;x=y\r\n23}\r\n0\r\n\r\n".utf8)
        let whole = try ToxiproxyReference.answer(to: "POST", "/proxies", chunked)
        #expect(whole.status == 201 && whole.body == "{\"a\": 123}", "\(whole)")
        #expect(throws: RuntimeError.self) { try ToxiproxyReference.answer(to: "POST", "/proxies", Array(chunked.dropLast(5))) }
        let sized = Array("HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n{\"b\": 2}".utf8)
        #expect(try ToxiproxyReference.answer(to: "GET", "/version", sized).body == "{\"b\": 2}")
        #expect(throws: RuntimeError.self) { try ToxiproxyReference.answer(to: "GET", "/version", Array(sized.dropLast(2))) }
    }
}
