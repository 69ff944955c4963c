import Foundation
import NetsimCore
@testable import NetsimRunner
import Testing

/// What the page's data keeps of a run, without a browser: bytes decimated into a bounded grid
/// with their totals intact, every other event a marker, nothing that could end the script
/// element, matrix cells pointing at their runs.
@Suite("The HTML report's data")
struct HTMLReportDataTests {
    @Test func bytesAreBinnedWithinTheBudgetAndEveryOtherEventIsKept() throws {
        let (result, faults, _) = try SyntheticRun.make(.init(connections: 300, byteEvents: 60, faultEvery: 7))
        let run = HTMLReportData.Run(id: "run-1", result: result)
        #expect(run.lanes.map(\.id) == Array(1...300), "one lane per connection, in accept order")
        var binCount = 0
        for lane in run.lanes {
            let bytes = result.events.filter { $0.connection?.raw == UInt64(lane.id) }
            func sent(_ direction: Direction) -> Int {
                bytes.reduce(0) { total, event in
                    if case .bytes(let d, let count) = event.kind, d == direction { return total + count }
                    return total
                }
            }
            let bins = stride(from: 0, to: lane.d.count, by: 3).map { lane.d[$0] }
            #expect(bins == bins.sorted() && Set(bins).count == bins.count, "each bin once, in order")
            #expect(stride(from: 1, to: lane.d.count, by: 3).reduce(0) { $0 + lane.d[$1] } == sent(.up))
            #expect(stride(from: 2, to: lane.d.count, by: 3).reduce(0) { $0 + lane.d[$1] } == sent(.down))
            binCount += bins.count
        }
        #expect(binCount <= ByteDensity.budget, "\(binCount) bins")
        let marks = run.lanes.flatMap(\.marks)
        #expect(marks.filter { $0.k == "fault" }.count == faults)
        #expect(marks.filter { $0.k == "open" }.count == 300 && marks.filter { $0.k == "rst" || $0.k == "end" }.count == 300, "every open and close")
        #expect(marks.filter { $0.k == "fin" }.count == 300 - faults)
        #expect(marks.filter { $0.k == "req" }.count == 300 && marks.filter { $0.k == "resp" }.count == 300 - faults)
        #expect(run.lanes.reduce(0) { $0 + $1.x.count / 2 } == faults, "the bytes the fault swallowed")
        #expect(run.relay.map(\.k) == ["listener", "added"])
        #expect(run.steps.map(\.line) == [10, 12], "each step with its scenario line")
        #expect(run.requests.filter { $0.conn == nil }.isEmpty)
    }

    @Test func binsOutOfOrderAreMergedAndSorted() {
        var bins = LaneBins(series: 2)
        bins.add(3, 10, series: 0)
        bins.add(3, 5, series: 1)
        bins.add(1, 7, series: 0)
        bins.add(3, 1, series: 0)
        #expect(bins.flattened == [1, 7, 0, 3, 11, 5])
        let grid = ByteDensity(end: 4_390_000_000, lanes: 5)
        #expect(grid.width == 7_317_000 && grid.bin(7_316_999) == 0 && grid.bin(7_317_000) == 1, "600 bins of whole microseconds")
        #expect(ByteDensity(end: 10_000_000_000, lanes: 1000).width == 83_334_000, "120 bins a lane for a thousand lanes")
    }

    @Test func theEmbeddedDataCannotEndItsScriptElement() throws {
        let (result, _, _) = try SyntheticRun.make(.init(connections: 2, byteEvents: 3, faultEvery: 2))
        let json = HTMLReportPage.embeddedJSON(HTMLReport.data([HTMLReport.Entry(.run(result))], matrix: nil, title: "</script>"))
        #expect(!json.contains("<"))
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(parsed["title"] as? String == "</script>")
    }

    /// A client's error message reaches the page as its first 500 characters and its length,
    /// in the request's message and its summary (QA 62: a megabyte message was carried whole).
    @Test func aLongErrorMessageIsBoundedOnThePage() throws {
        var (result, _, _) = try SyntheticRun.make(.init(connections: 2, byteEvents: 3, faultEvery: 2))
        let long = String(repeating: "m", count: 1_000_000)
        result.outcomes[1].response.errorMessage = long
        let request = HTMLReportData.Request(result.outcomes[1])
        #expect(request.message == String(repeating: "m", count: 500) + "… (1000000 characters)")
        #expect(request.summary.hasSuffix(" characters)") && request.summary.count < 600, "\(request.summary.prefix(80))")
        #expect(HTMLReport.render(result).utf8.count < 200_000)
        #expect(HTMLReportData.Request(result.outcomes[0]).summary == result.outcomes[0].summary, "a short one whole")
    }

    @Test func matrixCellsNameTheirRuns() throws {
        let (result, _, _) = try SyntheticRun.make(.init(connections: 1, byteEvents: 1, faultEvery: 2))
        var measurement = MatrixMeasurement()
        measurement.add(scenario: "synthetic", driver: "naive", .pass)
        measurement.add(scenario: "synthetic", driver: "naive", .fail("error"))
        measurement.add(scenario: "other", driver: "resilient", .error)
        let place = HTMLReport.MatrixPlace(scenario: "synthetic", driver: "naive")
        let data = HTMLReport.data([
            HTMLReport.Entry(.run(result), cell: place),
            HTMLReport.Entry(.run(result), cell: place),
            HTMLReport.Entry(.failure(scenario: "other", file: "other.scn", driver: "resilient", error: "no relay"), cell: HTMLReport.MatrixPlace(scenario: "other", driver: "resilient")),
        ], matrix: measurement, title: "suite")
        let matrix = try #require(data.matrix)
        #expect(matrix.scenarios == ["synthetic", "other"] && matrix.drivers == ["naive", "resilient"])
        #expect(matrix.cells[0][0]?.runs == ["run-1", "run-2"] && matrix.cells[0][0]?.state == "flaky")
        #expect(matrix.cells[0][1] == nil)
        #expect(matrix.cells[1][1]?.runs == ["run-3"] && matrix.cells[1][1]?.state == "error" && matrix.cells[1][1]?.text == "ERROR")
        #expect(data.runs[2].error == "no relay" && data.runs[2].lanes.isEmpty)
    }
}
