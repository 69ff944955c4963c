import Foundation
import NetsimCore
import NetsimLoopback
import Testing
@testable import NetsimPcap

/// The repository's root, found from this file.
let repositoryRoot: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.path
}()

/// A vendored capture in Fixtures/pcap.
func fixture(_ name: String) -> String { repositoryRoot + "/Fixtures/pcap/" + name }

let allFixtures = [
    "zeek-http-get.pcap", "zeek-http-pipelined-requests.pcap", "zeek-http-version-mismatch.pcap",
    "zeek-http-206_example_c.pcap", "pcpp-one_http_stream_fin.pcap", "pcpp-one_http_stream_rst.pcap",
    "arkime-http-wrapped-header.pcap", "arkime-http-301-get.pcap",
]

/// A fresh path in the temporary folder, removed by the caller.
func temporaryPath(_ name: String) -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("netsim-pcap-\(UUID().uuidString.prefix(8))-\(name)").path
}

struct ToolMissing: Error, CustomStringConvertible {
    var description: String
}

/// tshark, the reference these tests hold netsim against. ci/setup installs it; when it is
/// missing the test fails saying so (it is never skipped silently).
enum Tshark {
    static let executable: String? = {
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let candidate = "\(folder)/tshark"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }()

    /// Runs tshark and returns its standard output.
    static func run(_ arguments: [String]) async throws -> String {
        guard let executable else {
            throw ToolMissing(description: "tshark is not installed; run ci/setup (it installs the tshark package) — these tests compare netsim with tshark")
        }
        return try await WatchedProcess(URL(fileURLWithPath: executable), arguments).result(within: .seconds(60)).standardOutput
    }

    /// `-T fields` output: one array of fields per packet.
    static func fields(_ file: String, filter: String, _ names: [String]) async throws -> [[String]] {
        try await run(["-r", file, "-Y", filter, "-T", "fields"] + names.flatMap { ["-e", $0] })
            .split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
    }

    /// `-q -z conv,tcp`: the conversations' address pairs ("a:p <-> b:q").
    static func conversations(_ file: String) async throws -> [String] {
        try await run(["-r", file, "-q", "-z", "conv,tcp"]).split(separator: "\n").filter { $0.contains("<->") }.map { line in
            line.split(separator: " ", omittingEmptySubsequences: true).prefix(3).joined(separator: " ")
        }
    }

    /// `-q -z follow,tcp,raw,N`: the bytes each side sent in stream N (node 0 first).
    static func follow(_ file: String, stream: Int) async throws -> (first: [UInt8], second: [UInt8]) {
        let text = try await run(["-r", file, "-q", "-z", "follow,tcp,raw,\(stream)"])
        var first: [UInt8] = []
        var second: [UInt8] = []
        var inData = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("Node 1:") { inData = true; continue }
            guard inData, !line.hasPrefix("===") else { continue }
            let fromSecond = line.hasPrefix("\t")
            let hex = line.trimmingCharacters(in: .whitespaces)
            var bytes: [UInt8] = []
            var index = hex.startIndex
            while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex), let byte = UInt8(hex[index..<next], radix: 16) {
                bytes.append(byte)
                index = next
            }
            if fromSecond { second += bytes } else { first += bytes }
        }
        return (first, second)
    }
}

/// The `netsim` executable built beside the test bundle.
func netsimExecutable() -> URL {
    URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("netsim")
}

/// Runs `netsim` in the repository root; returns (status, stdout, stderr). Bounded by `timeout`.
func runNetsim(_ arguments: [String], timeout: Duration = .seconds(60)) async throws -> (Int32, String, String) {
    let result = try await WatchedProcess(netsimExecutable(), arguments, directory: URL(fileURLWithPath: repositoryRoot)).result(within: timeout)
    return (result.status, result.standardOutput, result.standardError)
}

/// Writes synthesized conversations to a capture, for reader and replay tests.
final class CaptureBuilder {
    let path: String
    private let writer: PcapFileWriter
    private(set) var time: Int64 = 1_700_000_000_000_000_000

    init(path: String) throws {
        self.path = path
        writer = try PcapFileWriter(path: path)
    }

    func advance(_ nanoseconds: Int64) { time += nanoseconds }

    func write(_ packets: [[UInt8]], captureLength: Int? = nil) {
        for packet in packets { writer.write(packet, nanoseconds: time, captureLength: captureLength) }
    }

    func close() { writer.close() }
}

let clientEnd = PacketEndpoint(address: [10, 0, 0, 1], port: 40_000)
let serverEnd = PacketEndpoint(address: [10, 0, 0, 2], port: 80)

/// One raw packet, for tests that need odd segments.
func segment(_ from: PacketEndpoint, _ to: PacketEndpoint, seq: UInt32, ack: UInt32 = 0, flags: TCPFlags = [.ack, .psh], _ payload: [UInt8] = []) -> [UInt8] {
    payload.withUnsafeBytes { raw in
        SyntheticPacket.tcp(from: from, to: to, seq: seq, ack: ack, flags: flags, ipID: 1, payload: raw)
    }
}

extension Array where Element == UInt8 {
    init(text: String) { self = Array(text.utf8) }
}
