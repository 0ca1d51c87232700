//! What every route does with a request body and with a store's answer: the body as a
//! JSON object, an optional string field, and the one mapping from store errors to HTTP
//! answers. Routes decide what they accept; this module decides how a mistake in the
//! body or a failed store looks to the client.

use serde_json::{Map, Value};

use super::error;
use super::http::{Request, Response};
use crate::store::StoreError;

/// What a route answers.
pub type Reply = Response<'static>;

/// The body as a JSON object (an empty body is an empty object).
pub fn body(req: &Request) -> Result<Map<String, Value>, Reply> {
    if req.body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(&req.body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(error(400, "the body must be a JSON object")),
        Err(e) => Err(error(400, format!("the body is not valid JSON: {e}"))),
    }
}

/// An optional string field.
pub fn opt_str(b: &Map<String, Value>, name: &str) -> Result<Option<String>, Reply> {
    match b.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(error(400, format!("`{name}` must be a string"))),
    }
}

/// A store error as an answer: a missing thing is a 404 with the store's message (which
/// names it and where to find the ids); a store lent for too long to a command run
/// beside `serve` a 503 naming it; anything else a 500 with the store's message (which
/// never holds a secret).
pub fn store_error(e: StoreError) -> Reply {
    match e {
        StoreError::NotFound(what) => error(404, what),
        lent @ StoreError::Lent { .. } => error(503, lent.to_string()).with("Retry-After", "5"),
        other => error(500, format!("the store failed: {other}")),
    }
}

/// The value of a store call, or the route answers [`store_error`].
macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return $crate::web::request::store_error(e),
        }
    };
}

/// The value of a request helper, or the route answers the helper's 4xx.
macro_rules! field {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(resp) => return resp,
        }
    };
}

pub(crate) use {field, tri};
