import Foundation
import NetsimLoopback
@testable import NetsimRunner
import Testing

/// `--html` pages opened in headless Chromium (see `Chromium`): a passing run, a failing run and
/// a matrix written by the netsim process, and a synthetic run of a thousand connections. Each
/// must draw itself with no console message and no script error, and the DOM after its scripts
/// ran must hold what a person looks for: the verdict, the checks, a swimlane per connection,
/// the markers. One test breaks a page on purpose to show the check catches it. Screenshots land
/// in `.build/report-screenshots/` for people to look at.
@Suite("The HTML report in a browser", .serialized, .enabled(if: Chromium.shouldTest, "headless Chromium is not installed; ci/setup installs it"))
struct HTMLReportBrowserTests {
    static let output = NetsimProcess.root.appendingPathComponent(".build/report-screenshots").path

    /// A fresh folder for one test's files.
    static func folder(_ name: String) throws -> String {
        let folder = ScenarioCommandTests.temporary(name)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }

    /// What every page must be: self-contained (nothing to fetch), drawn, silent.
    static func expectCleanPage(_ html: String, _ shown: Chromium.Rendering, sourceLocation: SourceLocation = #_sourceLocation) {
        for reference in ["src=", "<link", "@import", "url(http", "url('", "url(\"", "http://", "https://"] {
            #expect(!html.contains(reference), "the page refers to something outside it: \(reference)", sourceLocation: sourceLocation)
        }
        #expect(shown.clean, "\(shown.problems)", sourceLocation: sourceLocation)
    }

    /// Runs netsim with `arguments` (given the folder holding `files`) and `--html`, expects
    /// `status`, opens the page in Chromium — which must show it cleanly — and, when asked,
    /// saves a screenshot in `.build/report-screenshots/`.
    static func netsimPage(
        files: [String: String] = [:], _ arguments: (_ folder: String) -> [String], status expected: Int32,
        screenshot: String? = nil, height: Int = 1000, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> Chromium.Rendering {
        let chromium = try Chromium.require()
        let folder = try Self.folder("html")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for (name, text) in files { try text.write(toFile: folder + "/" + name, atomically: true, encoding: .utf8) }
        let page = folder + "/report.html"
        let (status, out, err) = try await ScenarioCommandTests.netsim(arguments(folder) + ["--html", page])
        #expect(status == expected, "\(out)\(err)", sourceLocation: sourceLocation)
        let shown = try await chromium.render(page)
        expectCleanPage(try String(contentsOfFile: page, encoding: .utf8), shown, sourceLocation: sourceLocation)
        if let screenshot { try await chromium.screenshot(page, to: output + "/" + screenshot, height: height) }
        return shown
    }

    static let oneRequest = ["one-request.scn": MatrixCommandTests.oneRequest]

    @Test func aPassingRunShowsItsVerdictChecksAndSwimlane() async throws {
        let shown = try await Self.netsimPage(files: Self.oneRequest, { ["run", $0 + "/one-request.scn"] }, status: 0, screenshot: "passing-run.png")
        #expect(shown.count(#"<span class="badge pass">PASS</span>"#) == 1)
        #expect(shown.count(#"<tr class="check pass">"#) == 1 && shown.count(#"<tr class="check fail">"#) == 0)
        #expect(shown.dom.contains("request one: status 200"))
        #expect(shown.count(#"<g class="lane"#) == 1, "one connection, one swimlane")
        #expect(shown.count(#"class="mark m-req"#) == 1 && shown.count(#"class="mark m-resp s-2xx"#) == 1)
        #expect(shown.count(#"class="req-bar r-ok"#) == 1, "the client's request, on its connection")
        #expect(shown.count(#"<g class="step""#) == 1)
    }

    @Test func aFailingRunShowsTheFailedChecksFaultsAndResets() async throws {
        // The naive client reuses its stale pooled connections after the lock: resets, a failure.
        let shown = try await Self.netsimPage({ _ in ["run", "Scenarios/lockscreen.scn", "--client", "naive"] }, status: 1, screenshot: "failing-run.png", height: 1500)
        #expect(shown.count(#"<span class="badge fail">FAIL</span>"#) == 1)
        #expect(shown.count(#"<tr class="check fail">"#) >= 1 && shown.count(#"<tr class="check pass">"#) >= 1)
        #expect(shown.dom.contains("Scenarios/lockscreen.scn:"), "each check names its scenario line")
        #expect(shown.count(#"<g class="lane"#) >= 4, "the four warm connections at least")
        #expect(shown.count(#"<g class="step""#) == 5, "the scenario's five steps")
        #expect(shown.count(#"class="mark m-fault"#) >= 1, "the stale fault firing")
        #expect(shown.count(#"class="mark m-rst"#) >= 1, "the resets it answers with")
        #expect(shown.count(#"class="req-bar r-err"#) >= 1, "the failed requests, on the connections that carried them")
        #expect(shown.dom.contains("zoom the timeline to"), "a failed check with a time offers to zoom there")
    }

    @Test func aMatrixLinksEveryCellToItsRun() async throws {
        let refused = try String(contentsOfFile: ScenarioCommandTests.root + "/Scenarios/refused.scn", encoding: .utf8)
        let files = Self.oneRequest.merging(["refused.scn": refused]) { a, _ in a }
        // naive fails `refused`.
        let shown = try await Self.netsimPage(files: files, { ["test", $0, "--client", "naive,resilient"] }, status: 1, screenshot: "matrix.png")
        #expect(shown.count(#"<table class="matrix">"#) == 1)
        #expect(shown.count(##"<td class="pass"><a href="#run-"##) == 3 && shown.count(##"<td class="fail"><a href="#run-"##) == 1, "\(shown.dom)")
        // Every cell's link leads to a run on the page.
        let table = try #require(shown.dom.components(separatedBy: #"<table class="matrix">"#).last?.components(separatedBy: "</table>").first)
        let links = table.components(separatedBy: ##"<a href="#"##).dropFirst().map { String($0.prefix { $0 != "\"" }) }
        #expect(links.count == 4, "\(table)")
        for link in links { #expect(shown.dom.contains(#"id="\#(link)""#), "\(link)") }
        #expect(shown.count(#"<details class="run "#) == 4)
        // The failed run is open and drawn; the passing ones wait for a click.
        #expect(shown.count(#"<details class="run fail" id="#) == 1 && shown.count(#"<tr class="check fail">"#) >= 1)
    }

    @Test func runWithSeveralDriversWritesEveryRunAndItsMatrix() async throws {
        let shown = try await Self.netsimPage(files: Self.oneRequest, { ["run", $0 + "/one-request.scn", "--client", "naive,resilient"] }, status: 0)
        #expect(shown.count(#"<table class="matrix">"#) == 1 && shown.count(##"<td class="pass"><a href="#run-"##) == 2)
        #expect(shown.dom.contains("<th>naive</th><th>resilient</th>"), "columns named as netsim test names them")
        #expect(shown.count(#"<details class="run pass" id="run-"#) == 2)
    }

    /// A client that accepts the captive portal's self-signed certificate is a security finding,
    /// shown on the page as the text report shows it (QA 62: only a marker's tooltip held it).
    @Test func aSecurityFindingIsShownOnThePage() async throws {
        let portal = try String(contentsOfFile: ScenarioCommandTests.root + "/Scenarios/portal-tls.scn", encoding: .utf8)
            .replacingOccurrences(of: "  driver: resilient\n", with: """
                  driver: exec
                  command: [python3, \(ScenarioCommandTests.root)/Fixtures/clients/urllib3_client.py]
                  settings: { verify: "false" }

                """)
        let shown = try await Self.netsimPage(files: ["insecure.scn": portal], { ["run", $0 + "/insecure.scn"] }, status: 1)
        #expect(shown.count(#"<span class="badge security">SECURITY</span>"#) == 1, "\(shown.dom.prefix(3000))")
        #expect(shown.count(#"<p class="security">⚠ SECURITY: the client accepted a self-signed certificate"#) >= 1)
    }

    /// The check must be able to fail: a page that throws, one with a syntax error and one that
    /// logs an error are each caught — by Chromium's console log and by the page's own record.
    @Test func aBrokenPageIsCaught() async throws {
        let chromium = try Chromium.require()
        let folder = try Self.folder("html-broken")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (result, _, _) = try SyntheticRun.make(.init(connections: 3, byteEvents: 10, faultEvery: 2))
        let html = HTMLReport.render(result)

        let good = folder + "/good.html"
        try html.write(toFile: good, atomically: true, encoding: .utf8)
        let clean = try await chromium.render(good)
        Self.expectCleanPage(html, clean)
        // Markup in the data (the description closes a script element) stays text.
        #expect(clean.dom.contains("<title>synthetic · naive — netsim report</title>"), "\(clean.dom.prefix(400))")
        #expect(clean.dom.contains("&lt;/script&gt;&lt;script&gt;document.title='injected'"))

        let breakages = [
            "a script that throws": html.replacingOccurrences(of: "NetsimReport.build(JSON", with: "NetsimReport.bulid(JSON"),
            "a syntax error": html.replacingOccurrences(of: "</body>", with: "<script>function (</script></body>"),
            "console.error": html.replacingOccurrences(of: "</body>", with: "<script>console.error('drawn wrong')</script></body>"),
        ]
        for (what, broken) in breakages {
            #expect(broken != html)
            let file = folder + "/broken.html"
            try broken.write(toFile: file, atomically: true, encoding: .utf8)
            let shown = try await chromium.render(file)
            #expect(!shown.clean, "\(what) went unnoticed")
            #expect(!shown.console.isEmpty, "\(what): Chromium's log has it")
            #expect(shown.pageErrors >= 1, "\(what): the page's own record has it")
        }
    }

    /// Dragging across the timeline zooms into that span; hovering a marker shows the event
    /// with its exact time. (Mouse events dispatched by a script added to the page.)
    @Test func dragZoomsAndHoverShowsExactTimes() async throws {
        let chromium = try Chromium.require()
        let folder = try Self.folder("html-zoom")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (result, _, _) = try SyntheticRun.make(.init(connections: 4, byteEvents: 20, faultEvery: 2))
        let gesture = """
            <script>
            (function () {
              var box = document.querySelector('.timeline'), r = box.getBoundingClientRect();
              function at(type, px, target) { (target || box).dispatchEvent(new MouseEvent(type, { bubbles: true, button: 0, clientX: r.left + px, clientY: r.top + 80 })); }
              at('mousedown', 1100); at('mousemove', 1320); at('mouseup', 1320, window);
              var fault = document.querySelector('.mark.m-fault'), m = fault.getBoundingClientRect();
              fault.dispatchEvent(new MouseEvent('mousemove', { bubbles: true, clientX: m.left + 2, clientY: m.top + 2 }));
              var tip = document.getElementById('tip');
              document.body.setAttribute('data-range', document.querySelector('.controls .range').textContent);
              document.body.setAttribute('data-tip', tip.hidden ? 'hidden' : tip.textContent);
            })();
            </script></body>
            """
        let file = folder + "/zoom.html"
        try HTMLReport.render(result).replacingOccurrences(of: "</body>", with: gesture).write(toFile: file, atomically: true, encoding: .utf8)
        let shown = try await chromium.render(file)
        #expect(shown.clean, "\(shown.problems)")
        let body = try #require(shown.dom.components(separatedBy: "<body").last)
        let range = String(body.components(separatedBy: #"data-range=""#).last?.prefix { $0 != "\"" } ?? "")
        #expect(range.contains("(×"), "zoomed in: \(range)")
        #expect(!range.hasPrefix("0.000000 s"), "no longer from the start: \(range)")
        // The second connection's fault fires 2 ms before its end: 0.02 s + 2 s - 0.002 s.
        #expect(body.contains(#"data-tip="2.018000 s  stale: swallowed 106 bytes"#), "\(body.prefix(300))")
    }

    /// A byte bar ends where its connection does: a bin holding a connection's last bytes and its
    /// close was drawn whole, past the FIN (QA 62: by up to a 48th of the run with many lanes).
    /// Here 150 ms bins (a 90 s run) hold the last bytes (≈ 1.97 s) and the close (2.01 s) of
    /// each connection; zoomed in, a bar past the close stands out by tens of pixels.
    @Test func byteBarsEndWhereTheirConnectionCloses() async throws {
        let chromium = try Chromium.require()
        let folder = try Self.folder("html-fin")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var (result, _, _) = try SyntheticRun.make(.init(connections: 4, byteEvents: 150, faultEvery: 1000))
        result.duration = 90_000_000_000
        let measure = """
            <script>
            (function () {
              var box = document.querySelector('.timeline'), r = box.getBoundingClientRect();
              function at(type, px, target) { (target || box).dispatchEvent(new MouseEvent(type, { bubbles: true, button: 0, clientX: r.left + px, clientY: r.top + 80 })); }
              at('mousedown', 165); at('mousemove', 215); at('mouseup', 215, window);
              var past = [], checked = 0;
              document.querySelectorAll('g.lane').forEach(function (g) {
                var life = g.querySelector('rect.life'), svg = g.ownerSVGElement;
                if (!life) return;
                var right = life.x.baseVal.value + life.width.baseVal.value;
                if (right >= svg.width.baseVal.value - 10) return;  // open past the view's end
                checked++;
                g.querySelectorAll('path.d-up, path.d-down').forEach(function (p) {
                  var b = p.getBBox();
                  if (b.x + b.width > right + 1.5) past.push('#' + g.getAttribute('data-conn') + ' by ' + (b.x + b.width - right).toFixed(1) + ' px');
                });
              });
              document.body.setAttribute('data-range', document.querySelector('.controls .range').textContent);
              document.body.setAttribute('data-checked', String(checked));
              document.body.setAttribute('data-past', past.join(', ') || 'none');
            })();
            </script></body>
            """
        let file = folder + "/fin.html"
        try HTMLReport.render(result).replacingOccurrences(of: "</body>", with: measure).write(toFile: file, atomically: true, encoding: .utf8)
        let shown = try await chromium.render(file)
        #expect(shown.clean, "\(shown.problems)")
        let body = try #require(shown.dom.components(separatedBy: "<body").last)
        func attribute(_ name: String) -> String { String(body.components(separatedBy: "\(name)=\"").dropFirst().first?.prefix { $0 != "\"" } ?? "") }
        #expect(attribute("data-range").contains("(×"), "zoomed in: \(attribute("data-range"))")
        #expect(attribute("data-checked") == "4", "lanes closed in view: \(attribute("data-checked"))")
        #expect(attribute("data-past") == "none", "byte bars past their connection's close: \(attribute("data-past"))")
    }

    /// The requests table lists the first thousand requests and says how many more there are,
    /// and how many of those failed (QA 62: a row each for 100,000 made the page crawl).
    @Test func theRequestsTableListsAThousandAndCountsTheRest() async throws {
        let chromium = try Chromium.require()
        let folder = try Self.folder("html-rows")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (result, _, _) = try SyntheticRun.make(.init(connections: 1100, byteEvents: 2, faultEvery: 10))
        let file = folder + "/rows.html"
        try HTMLReport.render(result).write(toFile: file, atomically: true, encoding: .utf8)
        let shown = try await chromium.render(file)
        #expect(shown.clean, "\(shown.problems)")
        #expect(shown.count(#"<tr class="request "#) == 1000)
        #expect(shown.count("100 more requests (10 failed) not listed") == 1)
        #expect(shown.count(#"class="req-bar"#) == 1100, "every request still a bar")
    }

    /// A thousand connections and over 10 MB of events (as `--events` would write them): bytes
    /// are decimated into bins, but every fault, reset and close is drawn, and the browser draws
    /// it all in well under a minute (measured on 2 shared cores: see the printed line).
    @Test func aThousandConnectionsAndTenMegabytesOfEventsStayUsable() async throws {
        let chromium = try Chromium.require()
        let (result, faults, resets) = try SyntheticRun.make(.init(connections: 1000, byteEvents: 150, faultEvery: 10))
        let eventBytes = SyntheticRun.eventBytes(result)
        #expect(eventBytes >= 10_000_000)
        let building = ContinuousClock.now
        let html = HTMLReport.render(result)
        let built = ContinuousClock.now - building
        try FileManager.default.createDirectory(atPath: Self.output, withIntermediateDirectories: true)
        let page = Self.output + "/thousand-connections.html"
        try html.write(toFile: page, atomically: true, encoding: .utf8)
        #expect(html.utf8.count < 5_000_000, "decimated: \(html.utf8.count) bytes of page for \(eventBytes) bytes of events")

        let shown = try await chromium.render(page)
        Self.expectCleanPage(html, shown)
        #expect(shown.count(#"<g class="lane"#) == 1000)
        #expect(shown.count(#"class="mark m-open"#) == 1000, "every connection's opening")
        #expect(shown.count(#"class="mark m-fault"#) == faults, "no fault dropped")
        #expect(shown.count(#"class="mark m-rst s-relay"#) == resets, "no reset dropped")
        #expect(shown.count(#"class="mark m-end s-client"#) == 1000 - resets && shown.count(#"class="mark m-fin s-client"#) == 1000 - resets, "no close dropped")
        #expect(shown.count(#"class="req-bar r-err"#) == faults)
        #expect(shown.seconds < 60, "Chromium took \(shown.seconds) s")
        let line = "1000 connections, \(eventBytes) bytes of events (\(result.events.count) events) → \(html.utf8.count) bytes of HTML in \(built); Chromium loaded and drew it in \(String(format: "%.2f", shown.seconds)) s"
        print("HTML report scale: " + line)
        try (line + "\n").write(toFile: Self.output + "/thousand-connections.txt", atomically: true, encoding: .utf8)
        try await chromium.screenshot(page, to: Self.output + "/thousand-connections.png")
    }
}
