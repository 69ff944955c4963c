import Foundation
import NetsimScenario

/// Finding and loading scenario files the way people type their paths.
enum ScenarioFiles {
    /// `scenarios/lockscreen.scn` finds `Scenarios/lockscreen.scn`: each path component is matched
    /// case-insensitively when the exact spelling does not exist.
    static func resolve(_ path: String) -> String {
        let manager = FileManager.default
        if manager.fileExists(atPath: path) { return path }
        var resolved = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/").map(String.init) {
            let folder = resolved.isEmpty ? "." : resolved
            let exact = (resolved as NSString).appendingPathComponent(component)
            if manager.fileExists(atPath: exact.isEmpty ? component : exact) {
                resolved = exact
                continue
            }
            let entries = (try? manager.contentsOfDirectory(atPath: folder)) ?? []
            guard let match = entries.first(where: { $0.lowercased() == component.lowercased() }) else { return path }
            resolved = (resolved as NSString).appendingPathComponent(match)
        }
        return resolved
    }

    /// What is said of a folder with no scenario in it.
    static let noScenarios = "no .scn files in this folder (or its subfolders)"

    /// Every `.scn` file under `folder` (any case: `X.SCN` too), recursively, sorted by path.
    static func scenarios(inFolder folder: String) -> [String] {
        (FileManager.default.enumerator(atPath: folder)?.allObjects as? [String] ?? [])
            .filter { $0.lowercased().hasSuffix(".scn") }
            .sorted()
            .map { (folder as NSString).appendingPathComponent($0) }
    }

    /// Paths that name no scenario: each missing one, or a folder with none, as `netsim check`
    /// says it (`PATH: error: …`, a line each).
    struct NotFound: Error, CustomStringConvertible {
        /// Each path as given, and what is wrong with it.
        var paths: [(path: String, problem: String)]
        var description: String { paths.map { "\($0.path): error: \($0.problem)" }.joined(separator: "\n") }
    }

    /// `.scn` files named directly or found (recursively, sorted) in folders; a file named twice
    /// (`Scenarios/ Scenarios/x.scn`) runs once. `notFound` names every path that gives none, so
    /// that the files there are still checked (QA 64: one missing path hid every other error).
    static func collect(_ paths: [String]) -> (files: [String], notFound: NotFound?) {
        var seen = Set<String>()
        var files: [String] = []
        var notFound: [(path: String, problem: String)] = []
        for raw in paths {
            let path = resolve(raw)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                notFound.append((raw, "no such file or folder"))
                continue
            }
            if isDirectory.boolValue {
                let found = scenarios(inFolder: path)
                if found.isEmpty { notFound.append((raw, noScenarios)) }
                files += found
            } else {
                files.append(path)
            }
        }
        files = files.filter { seen.insert(URL(fileURLWithPath: $0).standardizedFileURL.resolvingSymlinksInPath().path).inserted }
        return (files, notFound.isEmpty ? nil : NotFound(paths: notFound))
    }
}
