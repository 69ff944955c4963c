import Foundation

/// `netsim test --pcap DIR`: one capture per scenario, named after it.
enum PcapFolder {
    /// `DIR/<name>.pcap` for each scenario (a repeated name gets `-2`, `-3`, …); all nil without
    /// a folder. Creates the folder.
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
            let safe = String(name.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "-" })
            return (folder as NSString).appendingPathComponent(count == 1 ? "\(safe).pcap" : "\(safe)-\(count).pcap")
        }
    }
}
