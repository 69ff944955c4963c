import Foundation
import NetsimLoopback

/// Runs the `netsim` executable built next to this test bundle, as a person would.
enum NetsimProcess {
    /// The repository root.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `swift build --build-tests` puts the executable beside the test bundle; a missing one
    /// makes every test that runs it fail (it never skips).
    static var executable: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("netsim")
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs netsim with `arguments` in `directory` (the repository root by default) and waits for
    /// it to finish (at most `timeout`), holding no thread while it runs.
    static func run(_ arguments: [String], in directory: URL = root, timeout: Duration = .seconds(120)) async throws -> Result {
        let result = try await WatchedProcess(executable, arguments, directory: directory).result(within: timeout)
        return Result(status: result.status, stdout: result.standardOutput, stderr: result.standardError)
    }
}
