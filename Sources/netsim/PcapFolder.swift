import ArgumentParser
import Foundation

/// `netsim test --pcap DIR`: one capture per scenario, named after it.
enum PcapFolder {
    /// `DIR/<name>.pcap` for each scenario (a file name already given gets `-2`, `-3`, …); all
    /// nil without a folder. Creates the folder. Characters other than letters, digits, `-` and
    /// `_` become one `-` per run, none at the ends: `lockscreen [go]` is `lockscreen-go.pcap`.
    /// Names are compared as files: `x [a.b]` and `x [a-b]` both make `x-a-b` (QA 37: one
    /// capture overwrote the other).
    static func paths(for names: [String], in folder: String?) throws -> [String?] {
        guard let folder else { return names.map { _ in nil } }
        try create(folder)
        var used: Set<String> = []
        return names.map { name in
            let safe = fileName(name)
            var file = "\(safe).pcap", count = 1
            while used.contains(file) {
                count += 1
                file = "\(safe)-\(count).pcap"
            }
            used.insert(file)
            return (folder as NSString).appendingPathComponent(file)
        }
    }

    /// Creates `folder` (and its parents) unless it is one already: `--pcap`'s usage error
    /// before anything runs. A folder that could not be made failed after the suite's first line,
    /// with Foundation's "The operation could not be completed".
    static func create(_ folder: String) throws {
        if folder.isEmpty { throw ValidationError("--pcap was given an empty folder name; give one, e.g. --pcap captures/") }
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder) {
            guard isFolder.boolValue else { throw ValidationError("--pcap \(folder): is a file; give a folder for the captures") }
            guard access(folder, W_OK) == 0 else { throw ValidationError("--pcap \(folder): \(OutputFile.reason(errno))") }
            return
        }
        // Each missing folder on the way, with mkdir(2)'s own reason when one cannot be made.
        var made = folder.hasPrefix("/") ? "" : "."
        for component in folder.split(separator: "/") {
            made += "/" + component
            guard mkdir(made, 0o755) == 0 || errno == EEXIST else {
                throw ValidationError("--pcap \(folder): cannot create \(made): \(OutputFile.reason(errno))")
            }
        }
    }

    /// `name` with each run of other characters as one `-`, trimmed of them at both ends; `run`
    /// when nothing is left.
    static func fileName(_ name: String) -> String {
        let words = name.split { !($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
        let joined = words.joined(separator: "-")
        return joined.isEmpty ? "run" : joined
    }
}
