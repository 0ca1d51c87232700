//! A file sent to the agent, read from the platform's download answer: the one size
//! limit of every platform, and what a refused or oversized download tells the person.

use super::ChannelError;

/// Files larger than this are not taken (Telegram's own limit for bots; the others
/// follow it so that a chat behaves the same everywhere).
pub const MAX_FILE: u64 = 20 * 1024 * 1024;

fn too_large(platform: &str) -> ChannelError {
    ChannelError::Refused(format!(
        "the file is larger than the {} MB a {platform} file may be",
        MAX_FILE / (1024 * 1024)
    ))
}

/// The bytes of a download's answer from `platform`: a status other than 200 is the
/// platform failing, a file over [`MAX_FILE`] is refused (by its `Content-Length`
/// before anything is read, or once the limit is passed).
pub fn body(
    mut resp: ureq::http::Response<ureq::Body>,
    platform: &str,
) -> Result<Vec<u8>, ChannelError> {
    let status = resp.status().as_u16();
    if status != 200 {
        return Err(ChannelError::Unavailable(format!(
            "the {platform} file download answered HTTP {status}"
        )));
    }
    let length = resp
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if length.is_some_and(|n| n > MAX_FILE) {
        return Err(too_large(platform));
    }
    let bytes = resp
        .body_mut()
        .with_config()
        .limit(MAX_FILE + 1)
        .read_to_vec()
        .map_err(|e| match e {
            ureq::Error::BodyExceedsLimit(_) => too_large(platform),
            e => ChannelError::Unavailable(format!("cannot read a {platform} file: {e}")),
        })?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(too_large(platform));
    }
    Ok(bytes)
}
