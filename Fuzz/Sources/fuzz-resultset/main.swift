// ResultSet.parse: auto-detected, and forced to each format. API
// bodies come from the network and URL lists from users.
@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheResultSets
import Foundation
import FuzzSupport

func parse(_ data: Data, _ format: ResultSetFormat?) -> Result<ResultSet, ResultSetError> {
    do { return .success(try ResultSet.parse(data, format: format)) } catch { return .failure(error) }
}

func checkWellFormed(_ outcome: Result<ResultSet, ResultSetError>, forced: ResultSetFormat?) {
    switch outcome {
    case .success(let set):
        if let forced { require(set.format == forced, "forced \(forced), got \(set.format)") }
        require(!set.urls.isEmpty, "a result set without URLs")
        require(Set(set.urls).count == set.urls.count, "duplicate URLs in \(set.urls.map(shown))")
        for url in set.urls {
            require(!url.isEmpty && url == url.trimmingCharacters(in: .whitespacesAndNewlines), "untrimmed URL \(shown(url))")
        }
        if set.format == .urls {
            for url in set.urls {
                require(ResultSetParser.urlProblem(url) == nil, "URL list kept an invalid URL \(shown(url))")
            }
        }
    case .failure(let error):
        require(!error.message.isEmpty, "an error without a message (\(error.code))")
    }
}

runFuzzer { data in
    let detected = parse(data, nil)
    checkWellFormed(detected, forced: nil)
    require(parse(offsetSlice(data), nil) == detected, "a Data slice parses differently")

    // Forcing the format that was detected gives the same URLs.
    if case .success(let set) = detected {
        let forced = parse(data, set.format)
        require(forced == detected, "forced \(set.format) gives \(forced), detected gave \(detected)")
    }
    // And one more forced format, to reach the mismatch paths.
    let other = ResultSetFormat.allCases[data.count % ResultSetFormat.allCases.count]
    checkWellFormed(parse(data, other), forced: other)
}
