// `import ArtCache` is the whole embedding API, for embedders (the fronts in
// Examples/): the pipeline and the stages below it, re-exported so a front
// needs one import. No target of this package depends on this module; each
// imports the modules it uses (scripts/imports/check). The stages keep
// their internals `package`; what they declare `public` is exactly the
// value types the API is made of (`ArtCacheError`, `ImagePriority`,
// `CacheKey`; `DownloadSettings`, `IPNetwork`, `HostPattern`,
// `ProfileSettings`; `CacheSettings`, `RetryItem`; `ThumbnailSettings`,
// `VariantSpec`, `ImageSize`; `ResultSet` and its errors; `ServiceSettings`,
// `ThumbnailOptions`, `ServiceURLSigner`).
@_exported import ArtCacheCore
@_exported import ArtCacheFetch
@_exported import ArtCachePipeline
@_exported import ArtCacheRender
@_exported import ArtCacheResultSets
@_exported import ArtCacheServiceGrammar
@_exported import ArtCacheStore
@_exported import ArtCacheTier
