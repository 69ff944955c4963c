import Foundation

/// Runs the `netsim` executable built next to this test bundle, as a person would.
enum NetsimProcess {
    /// The repository root.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `swift build --build-tests` puts the executable beside the test bundle; a missing one
    /// makes every test that runs it fail (it never skips).
    static var executable: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("netsim")
    }

    private final class StderrBox: @unchecked Sendable {
        var data = Data()
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs netsim with `arguments` in `directory` (the repository root by default) and waits.
    static func run(_ arguments: [String], in directory: URL = root) throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Drain stderr on another thread while reading stdout: read one after the other, a
        // child that fills the stderr pipe (64 KiB) blocks forever and so does the test.
        let stderrData = StderrBox()
        let drained = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            stderrData.data = err.fileHandleForReading.readDataToEndOfFile()
            drained.signal()
        }
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        drained.wait()
        let stderr = stderrData.data
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self), stderr: String(decoding: stderr, as: UTF8.self))
    }
}
