//! Measurements on the wire: an agent of a distributed load sends its whole
//! `Stats` to be merged with the others' exactly as worker threads' are.
//! Histograms travel in HdrHistogram's V2 compressed encoding (base64), so
//! the merge adds the counts themselves, not summaries of them.

use hdrhistogram::Histogram;
use serde::{Deserialize, Deserializer, Serializer};

use crate::measure::summary::{decode, encode};

pub fn put<S: Serializer>(h: &Histogram<u64>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&encode(h))
}

pub fn take<'de, D: Deserializer<'de>>(d: D) -> Result<Histogram<u64>, D::Error> {
    let text = String::deserialize(d)?;
    decode(&text).map_err(|e| serde::de::Error::custom(format!("a histogram that does not decode: {e}")))
}

/// The full-range latency histograms: decoded with the bounds they were
/// encoded with, which every worker and agent shares.
pub mod latency {
    pub use super::{put as serialize, take as deserialize};
}

/// The auto-resizing per-second and per-URL histograms: auto-resizing
/// again once decoded, so that merging can grow them.
pub mod small {
    use super::*;

    pub use super::put as serialize;

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Histogram<u64>, D::Error> {
        let mut h = take(d)?;
        h.auto(true);
        Ok(h)
    }
}

/// A per-URL histogram made at the URL's first response (None before):
/// on the wire, None is sent as no string at all (null).
pub mod small_lazy {
    use super::*;

    #[allow(clippy::borrowed_box)] // serde hands the field as it is
    pub fn serialize<S: Serializer>(h: &Option<Box<Histogram<u64>>>, s: S) -> Result<S::Ok, S::Error> {
        match h {
            Some(h) => put(h, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Box<Histogram<u64>>>, D::Error> {
        let text = Option::<String>::deserialize(d)?;
        text.map(|t| {
            let mut h =
                decode(&t).map_err(|e| serde::de::Error::custom(format!("a histogram that does not decode: {e}")))?;
            h.auto(true);
            Ok(Box::new(h))
        })
        .transpose()
    }
}
