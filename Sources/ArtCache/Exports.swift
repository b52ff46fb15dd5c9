// `import ArtCache` is the whole embedding API. The stages below the
// pipeline keep their internals `package`; what they declare `public` is
// exactly the value types the API is made of (`ArtCacheError`,
// `ImagePriority`, `CacheKey`; `DownloadSettings`, `IPNetwork`,
// `HostPattern`, `ProfileSettings`; `CacheSettings`, `RetryItem`;
// `ThumbnailSettings`, `VariantSpec`, `ImageSize`; `ResultSet` and its
// errors; `ServiceSettings`, `ThumbnailOptions`, `ServiceURLSigner`),
// re-exported here so a front needs one import.
@_exported import ArtCacheCore
@_exported import ArtCacheFetch
@_exported import ArtCacheRender
@_exported import ArtCacheResultSets
@_exported import ArtCacheServiceGrammar
@_exported import ArtCacheStore
@_exported import ArtCacheTier
