import Foundation
import NetsimFaults
import Testing
@testable import NetsimScenario

/// Every file in Fixtures/scenarios/invalid is a scenario with one class of mistake; the
/// `.expected` file beside it holds exactly what `netsim check` prints for it.
@Suite("Scenario files: invalid fixtures")
struct InvalidFixtureTests {
    /// The package root, found from this file's path (Tests/NetsimScenarioTests/…).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let directory = "Fixtures/scenarios/invalid"

    static var fixtureNames: [String] {
        let url = root.appendingPathComponent(directory)
        let files = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
        return files.filter { $0.hasSuffix(".scn") }.map { String($0.dropLast(4)) }.sorted()
    }

    /// Parses `directory/NAME.scn` by its relative path, as `netsim check` run from the package root
    /// would, and returns what it prints. From another working directory the absolute path is
    /// used and the root removed from the text, so the result is the same on every machine.
    static func rendered(_ name: String) -> String? {
        let relative = "\(directory)/\(name).scn"
        let inRoot = FileManager.default.currentDirectoryPath == root.path
        let path = inRoot ? relative : root.appendingPathComponent(relative).path
        do {
            _ = try ScenarioParser.parse(file: path)
            return nil
        } catch {
            let text = error.rendered()
            return inRoot ? text : text.replacingOccurrences(of: root.path + "/", with: "")
        }
    }

    @Test func thereAreAtLeastFortyFixtures() {
        #expect(Self.fixtureNames.count >= 40)
    }

    /// docs/scenario-format.md lists the error classes by fixture: one added without a row there
    /// is a class the reader does not learn of (QA 61: 25 were missing).
    @Test func theFormatPageNamesEveryFixture() throws {
        let page = try String(contentsOf: Self.root.appendingPathComponent("docs/scenario-format.md"), encoding: .utf8)
        let missing = Self.fixtureNames.filter { !page.contains("`\($0)`") }
        #expect(missing.isEmpty, "not in docs/scenario-format.md's table of error classes: \(missing.joined(separator: ", "))")
    }

    @Test(arguments: fixtureNames)
    func fixtureFailsWithTheExpectedText(_ name: String) throws {
        let expectedURL = Self.root.appendingPathComponent("\(Self.directory)/\(name).expected")
        let expected = FaultCatalog.expandingPlaceholder(in: try String(contentsOf: expectedURL, encoding: .utf8))
        let rendered = try #require(Self.rendered(name), "\(name).scn parsed without errors")
        #expect(rendered == expected)
    }

    @Test(arguments: fixtureNames)
    func everyDiagnosticNamesTheFileAndALineInIt(_ name: String) throws {
        let path = Self.root.appendingPathComponent("\(Self.directory)/\(name).scn").path
        do {
            _ = try ScenarioParser.parse(file: path)
            Issue.record("\(name).scn parsed without errors")
        } catch {
            #expect(!error.diagnostics.isEmpty)
            for diagnostic in error.diagnostics {
                #expect(diagnostic.location.file == path)
                #expect((1...error.sourceLines.count).contains(diagnostic.location.line))
            }
            let positions = error.diagnostics.map { [$0.location.line, $0.location.column] }
            #expect(positions == positions.sorted { $0.lexicographicallyPrecedes($1) })
        }
    }
}
