/// A hint for an exec client that died at start for want of a library: what its log says is
/// missing, and how to get it (QA 58: a client without `httpx` showed only Python's traceback).
enum MissingDependencyHint {
    /// The hint, or nil when `log` names no missing module.
    static func hint(in log: String) -> String? {
        // Python: ModuleNotFoundError: No module named 'httpx' (or 'h2.config': the package is h2).
        if let module = quotedName(after: "No module named '", in: log) {
            let package = module.split(separator: ".").first.map(String.init) ?? module
            return "python3 cannot import \(package): install it (pip install \(package)); ci/setup installs what the bundled clients need"
        }
        // Node: Cannot find module 'undici' (CommonJS) or Cannot find package 'undici' (ES modules).
        if let module = quotedName(after: "Cannot find module '", in: log) ?? quotedName(after: "Cannot find package '", in: log) {
            return "node cannot find \(module): install it (npm install \(module)); ci/setup installs what the bundled clients need"
        }
        return nil
    }

    /// The text from `marker` to the next `'`, when `log` has it.
    private static func quotedName(after marker: String, in log: String) -> String? {
        guard let start = log.range(of: marker)?.upperBound,
              let end = log[start...].firstIndex(of: "'"), start < end else { return nil }
        return String(log[start..<end])
    }
}
