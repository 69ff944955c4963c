import Foundation

/// Where a relative path written in a scenario (an exec `command:`'s script, a replayed
/// capture, a link trace) is found: beside the scenario file first, as a reader of the file
/// expects, then in its parent folders (so `Fixtures/…` written in `Scenarios/x.scn` finds the
/// repository's fixture), then in the current directory. The first that exists wins; none: the
/// path as the current directory makes it (whoever opens it reports it missing).
public enum ScenarioPaths {
    public static func resolve(_ path: String, scenarioFile: String, workingDirectory: String = FileManager.default.currentDirectoryPath) -> String {
        guard !path.hasPrefix("/") else { return path }
        let manager = FileManager.default
        let cwd = URL(fileURLWithPath: workingDirectory)
        var folder = URL(fileURLWithPath: scenarioFile, relativeTo: cwd).deletingLastPathComponent()
        for _ in 0..<6 {
            let candidate = folder.appendingPathComponent(path).path
            if manager.fileExists(atPath: candidate) { return candidate }
            if folder.path == "/" { break }
            folder = folder.deletingLastPathComponent()
        }
        return cwd.appendingPathComponent(path).path
    }
}
