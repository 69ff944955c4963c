import ArgumentParser
import Foundation
import NetsimCore

/// Checks, before anything runs, that the file an option names can be written: a run whose
/// `--json` or `--junit` cannot be saved should fail at once with the reason, not after minutes
/// of running, and not with Foundation's "You don't have permission" for a missing folder.
enum OutputFile {
    /// Throws a usage error naming `option` if `path` (nil: not asked for; `-`: standard output)
    /// is a directory, or is missing and its folder is missing or not writable.
    ///
    /// Writability is tried, not asked of `access(2)`, which says yes to root for a read-only
    /// file system or /proc: a regular file is opened for writing (not truncated), and in a
    /// folder a uniquely named file is created and removed at once (the report is written
    /// through such a file and a rename).
    ///
    /// - Parameter standardOutputHolds: what the command itself prints on standard output
    ///   (`netsim run`'s report), where `-` would mix with it: `-` is then refused. It was taken
    ///   as a file named `-` in the working directory.
    static func check(_ path: String?, option: String, standardOutputHolds: String? = nil) throws {
        if path == "-", let standardOutputHolds {
            throw ValidationError("\(option) -: standard output holds \(standardOutputHolds); give a file name (or /dev/stdout to mix them)")
        }
        guard let path, path != "-" else { return }
        // An empty name (`--pcap "$UNSET"`) was taken as the working directory's path and failed
        // late, as `cannot write the capture : : No such file…`, or after a whole run.
        if path.isEmpty { throw ValidationError("\(option) was given an empty file name; give one, e.g. \(option) \(example(for: option))") }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            if isDirectory.boolValue { throw ValidationError("\(option) \(path): is a directory; give a file name") }
            // A FIFO or /dev/fd/N (a shell's process substitution) is only asked: opening a FIFO
            // would wait for its reader.
            var status = stat()
            let regular = stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFREG
            let descriptor = regular ? open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC) : (access(path, W_OK) == 0 ? -2 : -1)
            if descriptor == -1 { throw ValidationError("\(option) \(path): \(reason(errno))") }
            if descriptor >= 0 { close(descriptor) }
            var link = stat()
            // A regular file is replaced through a temporary one beside it (a symlink, a device or
            // a FIFO is written in place): its folder must take one too (/proc/version opens).
            guard regular, lstat(path, &link) == 0, link.st_mode & S_IFMT == S_IFREG else { return }
        }
        var folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var link = stat()
        if lstat(path, &link) == 0, link.st_mode & S_IFMT == S_IFLNK, let target = try? FileManager.default.destinationOfSymbolicLink(atPath: path) {
            // A dangling symlink: its target is made where it points, as a shell's redirection.
            let resolved = target.hasPrefix("/") ? target : (folder as NSString).appendingPathComponent(target)
            folder = URL(fileURLWithPath: resolved).deletingLastPathComponent().path
        }
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
            // QA 52: `out/a.txt/x` with a.txt a file said there was no folder out/a.txt.
            if FileManager.default.fileExists(atPath: folder) {
                throw ValidationError("\(option) \(path): \(folder) is a file, not a folder to write it in")
            }
            throw ValidationError("\(option) \(path): there is no folder \(folder) to write it in")
        }
        let probe = (folder as NSString).appendingPathComponent(".netsim-write-check-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        let descriptor = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if descriptor < 0 {
            // A file that exists in a folder that takes no new one (/proc/version): the errno of
            // the probe's creation (ENOENT on /proc) spoke of a missing file that is there (QA 52).
            if FileManager.default.fileExists(atPath: path) {
                throw ValidationError("\(option) \(path): cannot replace it: \(folder) takes no new file (a report is written beside it, then renamed over it)")
            }
            throw ValidationError("\(option) \(path): cannot create it in \(folder): \(reason(errno))")
        }
        close(descriptor)
        unlink(probe)
    }

    /// Throws a usage error when two report options name one file (only the last written was
    /// kept), or one names an input (`--json x.scn` wrote over the scenario). `outputs`: option
    /// and path (nil: not asked for); `-` and the devices that stream (`/dev/stdout`) may repeat.
    static func checkDistinct(_ outputs: [(option: String, path: String?)], inputs: [String]) throws {
        let key = identity
        var seen: [String: String] = [:]
        for case let (option, path?) in outputs where path != "-" && !path.isEmpty && !path.hasPrefix("/dev/") {
            let file = key(path)
            if let input = inputs.first(where: { key($0) == file }) {
                throw ValidationError("\(option) \(path): that is \(input), an input of this command; give the report another name")
            }
            if let earlier = seen[file] { throw ValidationError("\(option) \(path): \(earlier) names that file too; give each report its own") }
            seen[file] = option
        }
    }

    /// Whether `path` is standard output: `-`, or a name for the file descriptor 1 is open on
    /// (`/dev/stdout`, `/dev/fd/1`, the file it is redirected to).
    static func isStandardOutput(_ path: String) -> Bool {
        path == "-" || StandardStream.same(as: path) == .output
    }

    /// What tells two outputs apart: an existing file's device and inode — a hard link is the
    /// same file under another name (QA 67: `--events hard --pcap file` wrote the events over the
    /// capture) — else the path ``canonical(_:)`` resolves.
    static func identity(_ path: String) -> String {
        var file = stat()
        if stat(path, &file) == 0 { return "file \(file.st_dev):\(file.st_ino)" }
        return canonical(path)
    }

    /// The file `path` names once every symbolic link is followed, a dangling one too: `l.pcap`
    /// pointing at a `t.pcap` yet to be written is `t.pcap` (QA 52: `--pcap l.pcap --events
    /// t.pcap` passed the check, and the events overwrote the capture). Foundation resolves a
    /// link only when its target exists.
    static func canonical(_ path: String) -> String {
        var url = URL(fileURLWithPath: path)
        for _ in 0..<40 {  // the kernel's own limit of links in a row (ELOOP)
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: url.path) else { break }
            url = URL(fileURLWithPath: target, relativeTo: url.deletingLastPathComponent()).absoluteURL
        }
        // The folder exists (the outputs were checked first): resolve its own links too.
        return url.deletingLastPathComponent().resolvingSymlinksInPath().appendingPathComponent(url.lastPathComponent).standardizedFileURL.path
    }

    /// A file name fit for `option`, for hints.
    private static func example(for option: String) -> String {
        switch option {
        case "--pcap": "run.pcap"
        case "--events": "run.jsonl"
        case "--html": "run.html"
        case "--junit": "junit.xml"
        case "--stats": "counts.json"
        default: "run.json"
        }
    }

    /// The system's words for `code` (`No such file or directory`).
    static func reason(_ code: Int32) -> String { String(cString: strerror(code)) }

    /// Removes the reports an earlier run left at the paths this one writes (regular files, not
    /// this process's own output, nor a symlink, which a report is written through): a run
    /// interrupted before it writes its own leaves none, and CI collecting reports read the
    /// earlier run's as this one's (QA 58 for `netsim test`, QA 66 for `netsim run`).
    static func removeEarlierReports(_ paths: [String?]) {
        for path in paths.compactMap({ $0 }) {
            var file = stat()
            guard lstat(path, &file) == 0, file.st_mode & S_IFMT == S_IFREG, StandardStream.same(as: path) == nil else { continue }
            unlink(path)
        }
    }
}

