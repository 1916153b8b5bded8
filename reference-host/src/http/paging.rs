//! Paged and streamed lists of a goal's history (`/events`,
//! `/evaluations`). With `limit`, one page and a `Link` to the next; without
//! it, the whole list as a body written a page at a time, so an answer
//! never sits whole in memory however long the goal's history is. (Built
//! whole, one goal's evaluations reached 27 MB per request.)

use std::future::Future;

use axum::body::{Body, Bytes};
use axum::http::header::{HeaderValue, CONTENT_TYPE, LINK};
use axum::response::Response;
use futures_util::StreamExt;

use super::error::ApiError;

/// The largest page `?limit=` gets; a larger `limit` gets pages of this
/// size (the `Link` says where the next one is).
pub const MAX_PAGE: usize = 1000;

/// The pages an unpaged list is read and written in.
pub const STREAM_PAGE: usize = 256;

/// `limit` as a query gives it: digits only (`+5` or ` 5` would parse in
/// Rust and mean nothing to another host), at least 1, at most
/// [`MAX_PAGE`].
pub fn limit(text: Option<&String>) -> Result<Option<usize>, ApiError> {
    text.map(|text| {
        text.bytes()
            .all(|byte| byte.is_ascii_digit())
            .then(|| text.parse::<u64>().ok())
            .flatten()
            .filter(|limit| *limit >= 1)
            .map(|limit| usize::try_from(limit).unwrap_or(MAX_PAGE).min(MAX_PAGE))
            .ok_or_else(|| {
                ApiError::invalid_input(
                    "parameter",
                    "limit",
                    "limit must be a whole number of at least 1",
                )
            })
    })
    .transpose()
}

/// One page of items rendered as JSON text; `After` is the cursor a list
/// pages by (a sequence or iteration number, a goal id).
pub struct Page<After = u64> {
    pub items: Vec<Vec<u8>>,
    /// Where the page after this one starts; `None` after the last.
    pub next: Option<After>,
}

impl<After> Page<After> {
    /// The page of `size` items out of `read`, which was asked for one
    /// more so that whether it came back says if a page follows (and the
    /// last item shown is where it starts), without ending on an empty
    /// page.
    pub fn from_one_more<T>(
        mut read: Vec<T>,
        size: usize,
        cursor: impl Fn(&T) -> After,
        render: impl Fn(&T) -> Vec<u8>,
    ) -> Page<After> {
        let more = read.len() > size;
        read.truncate(size);
        Page {
            next: more.then(|| read.last().map(cursor)).flatten(),
            items: read.iter().map(render).collect(),
        }
    }
}

/// `{"<member>":[…]}` with `Link: <{path}?after=…&limit=…>; rel="next"`
/// when `more`.
pub fn page_response(member: &str, page: &Page, path: &str, limit: usize) -> Response {
    let mut response = Response::new(Body::from(chunk(member, &page.items, true, true)));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(after) = page.next {
        let next = format!("<{path}?after={after}&limit={limit}>; rel=\"next\"");
        if let Ok(value) = HeaderValue::from_str(&next) {
            response.headers_mut().insert(LINK, value);
        }
    }
    response
}

/// The whole list as a body of chunks, one page each: `first` (read
/// before answering, so a failing store is still a 500 with an envelope),
/// then what `read` gives for each cursor until a page says it was the
/// last. A failure after the first page cuts the body short, which a
/// client sees as a broken answer, never as a shorter list.
pub fn streamed<After, F, Fut>(member: &'static str, first: Page<After>, read: F) -> Response
where
    After: Send + 'static,
    F: Fn(After) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Page<After>, String>> + Send + 'static,
{
    let opening = chunk(member, &first.items, true, first.next.is_none());
    let read = std::sync::Arc::new(read);
    let rest = futures_util::stream::unfold(first.next, move |after| {
        let read = std::sync::Arc::clone(&read);
        async move {
            let after = after?;
            match read(after).await {
                Ok(page) => {
                    let bytes = chunk(member, &page.items, false, page.next.is_none());
                    Some((Ok(bytes), page.next))
                }
                Err(error) => Some((Err(std::io::Error::other(error)), None)),
            }
        }
    });
    let chunks = futures_util::stream::once(std::future::ready(Ok::<_, std::io::Error>(opening)))
        .chain(rest);
    let mut response = Response::new(Body::from_stream(chunks));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// One page of a list: `{"<member>":[` before the first, commas between
/// items and pages, `]}` after the last.
fn chunk(member: &str, items: &[Vec<u8>], first: bool, last: bool) -> Bytes {
    let size: usize = items.iter().map(Vec::len).sum();
    let mut chunk = Vec::with_capacity(size + items.len() + member.len() + 8);
    if first {
        chunk.extend_from_slice(b"{\"");
        chunk.extend_from_slice(member.as_bytes());
        chunk.extend_from_slice(b"\":[");
    }
    for (n, item) in items.iter().enumerate() {
        if n > 0 || !first {
            chunk.push(b',');
        }
        chunk.extend_from_slice(item);
    }
    if last {
        chunk.extend_from_slice(b"]}");
    }
    Bytes::from(chunk)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_join_into_one_list() {
        let items = |texts: &[&str]| {
            texts
                .iter()
                .map(|text| text.as_bytes().to_vec())
                .collect::<Vec<_>>()
        };
        let mut whole = chunk("events", &items(&["1", "2"]), true, false).to_vec();
        whole.extend_from_slice(&chunk("events", &items(&["3"]), false, false));
        whole.extend_from_slice(&chunk("events", &[], false, true));
        assert_eq!(
            String::from_utf8(whole).expect("text"),
            r#"{"events":[1,2,3]}"#
        );
        assert_eq!(&chunk("events", &[], true, true)[..], br#"{"events":[]}"#);
    }

    #[test]
    fn limits_are_digits_within_the_page() {
        let text = |value: &str| Some(value.to_string());
        assert_eq!(limit(None).ok(), Some(None));
        assert_eq!(limit(text("5").as_ref()).ok(), Some(Some(5)));
        assert_eq!(limit(text("5000").as_ref()).ok(), Some(Some(MAX_PAGE)));
        for bad in ["0", "+5", " 5", "-1", "x", ""] {
            assert!(limit(text(bad).as_ref()).is_err(), "{bad:?}");
        }
    }
}
