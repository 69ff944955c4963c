import Foundation

/// `netsim test --pcap DIR`: one capture per scenario, named after it.
enum PcapFolder {
    /// `DIR/<name>.pcap` for each scenario (a repeated name gets `-2`, `-3`, …); all nil without
    /// a folder. Creates the folder. Characters other than letters, digits, `-` and `_` become
    /// one `-` per run, none at the ends: `lockscreen [go]` is `lockscreen-go.pcap`.
    static func paths(for names: [String], in folder: String?) throws -> [String?] {
        guard let folder else { return names.map { _ in nil } }
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw RuntimeError("cannot create the capture folder \(folder): \(error.localizedDescription)")
        }
        var seen: [String: Int] = [:]
        return names.map { name in
            seen[name, default: 0] += 1
            let count = seen[name]!
            let safe = fileName(name)
            return (folder as NSString).appendingPathComponent(count == 1 ? "\(safe).pcap" : "\(safe)-\(count).pcap")
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
