//! Response bodies: streaming decompression (gzip, deflate, br, stacked up to three deep) into a
//! buffer that refuses to grow past the cap, so a decompression bomb stops at the cap.

use crate::error::{FetchError, FetchErrorKind};
use std::io::{self, Write};

/// The marker error the capped sink returns when the cap is reached.
#[derive(Debug)]
struct CapExceeded;

impl std::fmt::Display for CapExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("body cap exceeded")
    }
}

impl std::error::Error for CapExceeded {}

/// A `Vec` that refuses writes past `cap` bytes.
#[derive(Debug)]
struct Capped {
    buf: Vec<u8>,
    cap: usize,
}

impl Write for Capped {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.buf.len().saturating_add(data.len()) > self.cap {
            return Err(io::Error::other(CapExceeded));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One decoding layer over the next one; the innermost is the capped sink.
enum Layer {
    Sink(Capped),
    Gzip(Box<flate2::write::MultiGzDecoder<Layer>>),
    Deflate(Box<flate2::write::ZlibDecoder<Layer>>),
    Brotli(Box<brotli_decompressor::DecompressorWriter<Layer>>),
}

impl Write for Layer {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            Layer::Sink(s) => s.write(data),
            Layer::Gzip(d) => d.write(data),
            Layer::Deflate(d) => d.write(data),
            Layer::Brotli(d) => d.write(data),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Layer::Sink(s) => s.flush(),
            Layer::Gzip(d) => d.flush(),
            Layer::Deflate(d) => d.flush(),
            Layer::Brotli(d) => d.flush(),
        }
    }
}

impl Layer {
    fn finish(self) -> io::Result<Vec<u8>> {
        match self {
            Layer::Sink(s) => Ok(s.buf),
            Layer::Gzip(d) => d.finish()?.finish(),
            Layer::Deflate(d) => d.finish()?.finish(),
            Layer::Brotli(d) => match d.into_inner() {
                Ok(inner) => inner.finish(),
                Err(_) => Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "truncated brotli stream",
                )),
            },
        }
    }
}

/// Most stacked encodings accepted (`Content-Encoding: gzip, gzip, gzip`).
pub const MAX_ENCODINGS: usize = 3;

/// Decodes a body as it arrives. Counts raw bytes and decoded bytes against the same cap.
pub(crate) struct BodyDecoder {
    layer: Layer,
    raw: usize,
    cap: usize,
}

impl BodyDecoder {
    /// A decoder for the `Content-Encoding` values of a response (in the order they were
    /// applied). Unknown encodings are `unsupported_encoding`.
    pub(crate) fn new<'a>(
        encodings: impl Iterator<Item = &'a str>,
        cap: usize,
    ) -> Result<BodyDecoder, FetchError> {
        let mut names = Vec::new();
        for value in encodings {
            for token in value.split(',') {
                let token = token.trim().to_ascii_lowercase();
                if token.is_empty() || token == "identity" {
                    continue;
                }
                names.push(token);
            }
        }
        if names.len() > MAX_ENCODINGS {
            return Err(FetchError::new(
                FetchErrorKind::UnsupportedEncoding,
                format!(
                    "more than {MAX_ENCODINGS} content encodings stacked ({})",
                    names.len()
                ),
            ));
        }
        // The encoding applied last is decoded first: it is the outermost layer.
        let mut layer = Layer::Sink(Capped {
            buf: Vec::new(),
            cap,
        });
        for name in &names {
            layer = match name.as_str() {
                "gzip" | "x-gzip" => {
                    Layer::Gzip(Box::new(flate2::write::MultiGzDecoder::new(layer)))
                }
                "deflate" => Layer::Deflate(Box::new(flate2::write::ZlibDecoder::new(layer))),
                "br" => Layer::Brotli(Box::new(brotli_decompressor::DecompressorWriter::new(
                    layer, 8192,
                ))),
                other => {
                    return Err(FetchError::new(
                        FetchErrorKind::UnsupportedEncoding,
                        format!(
                            "content encoding {:?} is not supported",
                            truncate(other, 40)
                        ),
                    ));
                }
            };
        }
        Ok(BodyDecoder { layer, raw: 0, cap })
    }

    /// Feeds one chunk of the raw body.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Result<(), FetchError> {
        self.raw = self.raw.saturating_add(chunk.len());
        if self.raw > self.cap {
            return Err(too_large(self.cap));
        }
        self.layer
            .write_all(chunk)
            .map_err(|e| decode_failure(&e, self.cap))
    }

    /// Ends the body and returns the decoded bytes.
    pub(crate) fn finish(self) -> Result<Vec<u8>, FetchError> {
        let cap = self.cap;
        self.layer.finish().map_err(|e| decode_failure(&e, cap))
    }
}

fn too_large(cap: usize) -> FetchError {
    FetchError::new(
        FetchErrorKind::BodyTooLarge,
        format!("the response body is larger than {} bytes", cap),
    )
}

fn decode_failure(e: &io::Error, cap: usize) -> FetchError {
    if is_cap(e) {
        return too_large(cap);
    }
    FetchError::new(
        FetchErrorKind::DecodeError,
        format!("the response body could not be decompressed: {e}"),
    )
}

fn is_cap(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if err.is::<CapExceeded>() {
            return true;
        }
        if let Some(io) = err.downcast_ref::<io::Error>()
            && let Some(inner) = io.get_ref()
            && inner.is::<CapExceeded>()
        {
            return true;
        }
        cur = err.source();
    }
    false
}

fn truncate(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let _ = e.write_all(data);
        e.finish().unwrap_or_default()
    }

    #[test]
    fn identity_and_gzip_round_trip() -> Result<(), FetchError> {
        let mut d = BodyDecoder::new(std::iter::empty(), 100)?;
        d.push(b"hello")?;
        assert_eq!(d.finish()?, b"hello");
        let mut d = BodyDecoder::new(["gzip"].into_iter(), 100)?;
        d.push(&gzip(b"hello"))?;
        assert_eq!(d.finish()?, b"hello");
        let mut d = BodyDecoder::new(["gzip, gzip"].into_iter(), 100)?;
        d.push(&gzip(&gzip(b"twice")))?;
        assert_eq!(d.finish()?, b"twice");
        Ok(())
    }

    #[test]
    fn bomb_stops_at_the_cap() -> Result<(), FetchError> {
        let bomb = gzip(&vec![0u8; 1_000_000]);
        assert!(bomb.len() < 10_000);
        let mut d = BodyDecoder::new(["gzip"].into_iter(), 64 * 1024)?;
        let err = d.push(&bomb).err().map(|e| e.kind);
        assert_eq!(err, Some(FetchErrorKind::BodyTooLarge));
        Ok(())
    }

    #[test]
    fn corrupt_truncated_and_unknown() -> Result<(), FetchError> {
        let mut d = BodyDecoder::new(["gzip"].into_iter(), 100)?;
        let r = d
            .push(b"definitely not gzip data at all")
            .and_then(|()| d.finish().map(|_| ()));
        assert_eq!(r.err().map(|e| e.kind), Some(FetchErrorKind::DecodeError));
        let full = gzip(b"hello world, hello world");
        let mut d = BodyDecoder::new(["gzip"].into_iter(), 100)?;
        d.push(&full[..full.len() / 2])?;
        assert_eq!(
            d.finish().err().map(|e| e.kind),
            Some(FetchErrorKind::DecodeError)
        );
        assert_eq!(
            BodyDecoder::new(["zstd"].into_iter(), 100)
                .err()
                .map(|e| e.kind),
            Some(FetchErrorKind::UnsupportedEncoding)
        );
        assert_eq!(
            BodyDecoder::new(["gzip,gzip,gzip,gzip"].into_iter(), 100)
                .err()
                .map(|e| e.kind),
            Some(FetchErrorKind::UnsupportedEncoding)
        );
        Ok(())
    }

    #[test]
    fn raw_bytes_count_too() -> Result<(), FetchError> {
        let mut d = BodyDecoder::new(std::iter::empty(), 10)?;
        d.push(b"12345")?;
        assert_eq!(
            d.push(b"678901").err().map(|e| e.kind),
            Some(FetchErrorKind::BodyTooLarge)
        );
        Ok(())
    }
}
