import Foundation
import NetsimLoopback

/// Headless Chromium (Debian's `chromium`, installed by ci/setup) opening a report as a person
/// would, for the HTML report's browser tests.
///
/// Flags that work here (Chromium 156, as root, no display, no D-Bus): `--headless --no-sandbox`
/// (root cannot use the sandbox), `--disable-gpu`, a fresh `--user-data-dir` per run (no shared
/// profile lock), `--window-size` (the page lays its timeline out to the window's width), and
/// `--enable-logging=stderr --v=0`, which writes every console message and uncaught error as a
/// `…:INFO:CONSOLE…] "message", source: …` line on standard error. `--dump-dom` prints the DOM
/// after the load event (the report draws itself synchronously before it); `--screenshot`
/// writes a PNG. The D-Bus and GPU complaints Chromium prints here are not the page's and are
/// ignored.
struct Chromium {
    let executable: URL

    /// What Chromium is called on this machine, or why there is none. In CI (`CI` set) the
    /// tests fail without it — ci/setup installs it; elsewhere they are skipped.
    static let found: Result<Chromium, Missing> = {
        // $CHROMIUM, when set, is the only one tried.
        let candidates = ProcessInfo.processInfo.environment["CHROMIUM"].map { [$0] } ?? ["chromium", "chromium-browser", "google-chrome"]
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
        for name in candidates {
            let full = name.hasPrefix("/") ? [name] : path.map { $0 + "/" + name }
            if let hit = full.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) {
                return .success(Chromium(executable: URL(fileURLWithPath: hit)))
            }
        }
        return .failure(Missing())
    }()

    struct Missing: Error, CustomStringConvertible {
        var description: String {
            "headless Chromium is not installed (looked for $CHROMIUM, or else chromium, chromium-browser, google-chrome on PATH): run ci/setup, which installs Debian's chromium"
        }
    }

    /// Run the browser tests: Chromium is here, or CI requires it (and the tests then fail).
    static var shouldTest: Bool {
        if case .success = found { return true }
        return ProcessInfo.processInfo.environment["CI"] != nil
    }

    static func require() throws -> Chromium { try found.get() }

    /// What a page showed: its DOM once scripts ran, its console, how long the browser took.
    struct Rendering {
        /// The DOM after scripts ran, without the scripts' own text (which spells the markup it
        /// writes, and would be counted with it).
        var dom: String
        /// Every console message and uncaught error, as Chromium logged it.
        var console: [String]
        var seconds: Double

        /// `data-errors` on the root element: errors the page's own capture script recorded.
        var pageErrors: Int { Int(attribute("data-errors") ?? "") ?? -1 }
        var rendered: Bool { attribute("data-rendered") == "yes" }

        /// The root `<html …>` element's attribute.
        func attribute(_ name: String) -> String? {
            guard let open = dom.range(of: "<html"), let close = dom[open.upperBound...].firstIndex(of: ">") else { return nil }
            let tag = dom[open.upperBound..<close]
            guard let start = tag.range(of: " \(name)=\"") else { return nil }
            return String(tag[start.upperBound...].prefix { $0 != "\"" })
        }

        /// How many times `text` occurs in the DOM.
        func count(_ text: String) -> Int { dom.components(separatedBy: text).count - 1 }

        /// What a test says when the page was not clean.
        var problems: String {
            "console: \(console.isEmpty ? "nothing" : console.joined(separator: "\n"))\npage errors: \(attribute("data-error-text") ?? "none")"
        }
        var clean: Bool { console.isEmpty && pageErrors == 0 && rendered }
    }

    /// Opens `file` and returns the DOM after its scripts ran, and what it logged.
    func render(_ file: String, width: Int = 1400, height: Int = 1000) async throws -> Rendering {
        let started = ContinuousClock.now
        let result = try await run(["--window-size=\(width),\(height)", "--dump-dom", Self.url(file)])
        let elapsed = ContinuousClock.now - started
        let console = result.standardError.split(separator: "\n").map(String.init).filter { $0.contains(":CONSOLE") }
        return Rendering(dom: Self.withoutScripts(result.standardOutput), console: console, seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    /// Writes a PNG of `file` as a window of `width` × `height` shows it.
    func screenshot(_ file: String, to png: String, width: Int = 1400, height: Int = 1000) async throws {
        try FileManager.default.createDirectory(atPath: (png as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        _ = try await run(["--window-size=\(width),\(height)", "--hide-scrollbars", "--screenshot=\(png)", Self.url(file)])
    }

    private func run(_ arguments: [String]) async throws -> WatchedProcess.Result {
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-chromium-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: profile) }
        let flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=\(profile)", "--enable-logging=stderr", "--v=0"]
        return try await WatchedProcess(executable, flags + arguments).result(within: .seconds(120))
    }

    /// `html` with the content of every `<script>` element left out.
    static func withoutScripts(_ html: String) -> String {
        var out = "", rest = html[...]
        while let open = rest.range(of: "<script"), let close = rest[open.upperBound...].range(of: "</script>") {
            out += rest[..<open.lowerBound] + "<script>"
            rest = rest[close.lowerBound...]
        }
        return out + rest
    }

    static func url(_ file: String) -> String { URL(fileURLWithPath: file).absoluteString }
}
