import Foundation
import NetsimCore

/// Runs iproute2's `ip`, the reference client of the kernel's rtnetlink API.
///
/// Why not netlink from Swift: the setup is a dozen requests once per shell, `ip` is installed
/// wherever network namespaces are used (`ip netns` is also what makes a namespace persistent
/// and findable under /run/netns, which the stale-namespace sweep relies on), and its error
/// messages ("RTNETLINK answers: File exists") are what a person debugging a machine searches
/// for. A hand-written netlink encoder would be several hundred lines of message layouts for a
/// few milliseconds saved per shell.
public enum IPRoute {
    /// Where `ip` lives on Debian and most distributions.
    public static let candidates = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]

    public static var executable: String? {
        candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs `ip ARGUMENTS`; throws with its output when it exits non-zero. Returns standard output.
    @discardableResult
    public static func run(_ arguments: [String]) throws -> String {
        guard let executable else { throw PacketPathError.missing("needs iproute2's `ip` (apt-get install -y iproute2)") }
        let output = Pipe()
        let errors = Pipe()
        let process: SpawnedProcess
        do {
            process = try SpawnedProcess(executable, arguments, standardOutput: .pipe(output), standardError: .pipe(errors))
        } catch {
            throw PacketPathError.command("ip " + arguments.joined(separator: " "), "\(error)")
        }
        // `ip` prints little; reading both to the end before waiting cannot deadlock on a full pipe
        // for outputs this small, and reading standard output first keeps its order.
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        guard process.waitForExit() == .exited(0) else {
            throw PacketPathError.command("ip " + arguments.joined(separator: " "), String(decoding: err + out, as: UTF8.self))
        }
        return String(decoding: out, as: UTF8.self)
    }
}
