import Foundation
import NetsimCore
import NetsimLoopback
import Testing
@testable import NetsimService

/// The API's JSON: each field must have the JSON type Toxiproxy gives it (`true` is not 1, `5`
/// is not a string), and each refusal has the exact status and message clients have seen so far.
@Suite("Toxiproxy API: the JSON bodies")
struct ToxiproxyJSONTests {
    static let outageChoices = #""503", "500", "error-page", "truncated", "no-headers""#

    @Test("a toxic field of the wrong JSON type gets its exact 400", arguments: [
        (#"{"type":5}"#, #"toxic type must be a string, e.g. "latency""#),
        (#"{"type":"latency","stream":5}"#, "toxic stream must be the string upstream or downstream"),
        (#"{"type":"latency","name":null}"#, "toxic name must be a string"),
        (#"{"type":"latency","name":7}"#, "toxic name must be a string"),
        (#"{"type":"latency","toxicity":true}"#, "toxicity must be a number from 0 to 1"),
        (#"{"type":"latency","toxicity":"1"}"#, "toxicity must be a number from 0 to 1"),
        (#"{"type":"latency","toxicity":-0.1}"#, "toxicity must be a number from 0 to 1"),
        (#"{"type":"latency","attributes":[]}"#, "attributes must be a JSON object"),
        (#"{"type":"latency","attributes":{"latency":true}}"#, "attribute latency must be a number or a string"),
        (#"{"type":"latency","attributes":{"latency":null}}"#, "attribute latency must be a number or a string"),
        (#"{"type":"latency","attributes":{"latency":"5"}}"#, "attribute latency must be a number (milliseconds)"),
        (#"{"type":"latency","attributes":{"latency":1.5}}"#, "attribute latency must be a whole number from 0 to 10^12 (milliseconds), not 1.5"),
        (#"{"type":"bandwidth","attributes":{"rate":-1}}"#, "attribute rate must be a whole number from 0 to 10^12 (KB/s), not -1"),
        (#"{"type":"outage","attributes":{"kind":5}}"#, "attribute kind of an outage toxic must be a JSON string, one of \(ToxiproxyJSONTests.outageChoices) (got the number 5)"),
        (#"{"type":"outage","attributes":{"kind":5.5}}"#, "attribute kind of an outage toxic must be a JSON string, one of \(ToxiproxyJSONTests.outageChoices) (got the number 5.5)"),
        (#"{"type":"outage","attributes":{"kind":true}}"#, "attribute kind of an outage toxic must be a JSON string, one of \(ToxiproxyJSONTests.outageChoices) (got true)"),
        (#"{"type":"outage","attributes":{"kind":{}}}"#, "attribute kind of an outage toxic must be a JSON string, one of \(ToxiproxyJSONTests.outageChoices) (got an object)"),
        (#"{"type":"outage","attributes":{"code":5}}"#, "unknown attribute code for an outage toxic (allowed: kind)"),
        ("5", #"malformed JSON body: a bare JSON value; send a JSON object, such as {"name":"db","listen":"127.0.0.1:26379","upstream":"127.0.0.1:6379"} or {"type":"latency","attributes":{"latency":100}} (an array of proxies to /populate)"#),
        (#"{"type":"#, #"malformed JSON body: Unexpected end of file during JSON parse; send a JSON object, such as {"name":"db","listen":"127.0.0.1:26379","upstream":"127.0.0.1:6379"} or {"type":"latency","attributes":{"latency":100}} (an array of proxies to /populate)"#),
        ("[1]", "the JSON body must be an object"),
        ("", "missing JSON body"),
    ])
    func toxicFieldTypes(body: String, message: String) async throws {
        try await ToxiproxyAPITests.withAPI { api, echo in
            _ = await ToxiproxyAPITests.createProxy(api, echo)
            let response = await api.handle(APIRequest(method: "POST", uri: "/proxies/db/toxics", json: body))
            #expect(response.status == 400)
            #expect(response.decoded(as: ErrorJSON.self) == ErrorJSON(APIError(400, message)))
        }
    }

    @Test("absent, null and empty fields take Toxiproxy's defaults", arguments: [
        #"{"type":"latency","stream":null,"name":"","toxicity":null,"attributes":null}"#,
        #"{"type":"latency","stream":""}"#,
        #"{"type":"latency","stream":"DownStream"}"#,  // any case, as Toxiproxy's ParseDirection reads it
    ])
    func defaults(body: String) async throws {
        try await ToxiproxyAPITests.withAPI { api, echo in
            _ = await ToxiproxyAPITests.createProxy(api, echo)
            let response = await api.handle(APIRequest(method: "POST", uri: "/proxies/db/toxics", json: body))
            #expect(response.status == 200, "\(response.text)")
            #expect(response.text == #"{"attributes":{"jitter":0,"latency":0},"name":"latency_downstream","stream":"downstream","toxicity":1,"type":"latency"}"# + "\n")
        }
    }

    /// Toxiproxy refuses a body its decoder cannot read ("bad request body"); here the field is
    /// named (QA 59: a text field of another type counted as absent).
    @Test("a proxy field of the wrong JSON type is refused, naming it", arguments: [
        (#"{"name":5,"upstream":"127.0.0.1:9"}"#, #"name must be a string, e.g. "redis""#),
        (#"{"name":"x","upstream":["127.0.0.1:9"]}"#, #"upstream must be a string, e.g. "127.0.0.1:6379""#),
        (#"{"name":"x","upstream":"127.0.0.1:9","listen":5}"#, #"listen must be a string, e.g. "127.0.0.1:26379""#),
        (#"{"name":"x","upstream":"127.0.0.1:9","enabled":1}"#, "enabled must be true or false"),
        (#"{"name":"x","upstream":"127.0.0.1:9","enabled":"true"}"#, "enabled must be true or false"),
        (#"{"enabled":"yes"}"#, "missing required field: name"),
    ])
    func proxyFieldTypes(body: String, message: String) async throws {
        try await ToxiproxyAPITests.withAPI { api, _ in
            let response = await api.handle(APIRequest(method: "POST", uri: "/proxies", json: body))
            #expect(response.decoded(as: ErrorJSON.self) == ErrorJSON(APIError(400, message)))
        }
    }

    @Test func aNullListenMeansAFreePortAndNullEnabledMeansEnabled() async throws {
        try await ToxiproxyAPITests.withAPI { api, echo in
            let response = await api.handle(APIRequest(method: "POST", uri: "/proxies",
                                                       json: #"{"name":"x","upstream":"\#(echo.endpoint)","listen":null,"enabled":null}"#))
            #expect(response.status == 201)
            let proxy = try #require(response.decoded(as: ProxyJSON.self))
            #expect(proxy.enabled)
            #expect(try Endpoint(parsing: proxy.listen).port != 0)
        }
    }

    @Test func aFailedPopulateListsTheProxiesItMade() async throws {
        try await ToxiproxyAPITests.withAPI { api, echo in
            let body = #"[{"name":"p1","upstream":"\#(echo.endpoint)"},null,{"name":"p2","upstream":"\#(echo.endpoint)"}]"#
            let response = await api.handle(APIRequest(method: "POST", uri: "/populate", json: body))
            let error = try #require(response.decoded(as: ErrorJSON.self))
            #expect(response.status == 400)
            #expect(error.error == "each proxy must be a JSON object")
            #expect(error.proxies?.map(\.name) == ["p1"])
            #expect(await api.handle(APIRequest(method: "GET", uri: "/proxies/p2")).status == 404)
            let notArray = await api.handle(APIRequest(method: "POST", uri: "/populate", json: "{}"))
            #expect(notArray.decoded(as: ErrorJSON.self) == ErrorJSON(APIError(400, "populate takes a JSON array of proxies")))
        }
    }

    @Test func numbersAreWrittenAsToxiproxyWritesThem() async throws {
        try await ToxiproxyAPITests.withAPI { api, echo in
            _ = await ToxiproxyAPITests.createProxy(api, echo)
            let response = await api.handle(APIRequest(method: "POST", uri: "/proxies/db/toxics",
                                                       json: #"{"type":"loss","toxicity":0.25,"attributes":{"percent":12.5}}"#))
            #expect(response.text == #"{"attributes":{"percent":12.5},"name":"loss_downstream","stream":"downstream","toxicity":0.25,"type":"loss"}"# + "\n")
            let error = await api.handle(APIRequest(method: "GET", uri: "/nothing"))
            #expect(error.text == #"{"error":"not found: \/nothing","status":404}"# + "\n")
        }
    }
}

import NetsimRelay

/// Every fault with a toxic in the catalog is a toxic type of the API, with its defaults.
@Suite("Fault toxics come from the catalog")
struct CatalogToxicTests {
    @Test("each catalog toxic is a known type that works with its string defaults and 1 for numbers")
    func everyCatalogToxicWorks() throws {
        for mapping in FaultCatalog.toxicTypes {
            #expect(Toxic.types[mapping.type] == mapping.attributes.map(\.name))
            var toxic = try Toxic(name: nil, type: mapping.type, stream: .downstream)
            let numbers = mapping.attributes.filter { $0.kind == .milliseconds || $0.kind == .bytes }
            try toxic.update(toxicity: nil, attributes: Dictionary(uniqueKeysWithValues: numbers.map { ($0.name, .number(1)) }))
            #expect(!toxic.faultRules().isEmpty, "\(mapping.type)")
        }
    }

    @Test("stall's and limit_data's stream picks the direction; cut's close is a choice")
    func streamAndChoices() throws {
        var stall = try Toxic(name: nil, type: "stall", stream: .upstream)
        try stall.update(toxicity: nil, attributes: [:])
        #expect(stall.faultRules().map(\.kind) == [.stall(.up)])
        var cut = try Toxic(name: nil, type: "cut", stream: .downstream)
        try cut.update(toxicity: nil, attributes: ["bytes": .number(10), "close": .string("rst")])
        #expect(cut.faultRules().map(\.kind) == [.cut(bytes: 10, .rst)])
        #expect(throws: APIError.self) { try cut.update(toxicity: nil, attributes: ["close": .string("later")]) }
        // limit_data counts its stream's bytes, as Toxiproxy's does (upstream was refused).
        for (stream, direction) in [(ToxicStream.upstream, Direction.up), (.downstream, .down)] {
            var limit = try Toxic(name: nil, type: "limit_data", stream: stream)
            try limit.update(toxicity: nil, attributes: ["bytes": .number(5)])
            #expect(limit.faultRules().map(\.kind) == [.limit(bytes: 5, direction)])
        }
    }
}
