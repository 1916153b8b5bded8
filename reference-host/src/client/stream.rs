//! Reading a Server-Sent Events answer message by message (the subset a
//! goalpost host sends: `id`, `event`, `data`, comments).

use super::http::{ClientError, BODY_CAP};

/// One message; comments (heartbeats) are skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub id: Option<String>,
    pub event: String,
    pub data: String,
}

/// The messages of one open stream.
pub struct Messages {
    response: reqwest::Response,
    buffer: String,
}

impl Messages {
    pub fn new(response: reqwest::Response) -> Messages {
        Messages {
            response,
            buffer: String::new(),
        }
    }

    /// The next message; `None` when the host ended the stream.
    pub async fn next(&mut self) -> Result<Option<Message>, ClientError> {
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                if let Some(message) = parse(&block) {
                    return Ok(Some(message));
                }
            }
            let url = self.response.url().to_string();
            let chunk = self
                .response
                .chunk()
                .await
                .map_err(|error| ClientError::Transport {
                    url: url.clone(),
                    message: error.to_string(),
                })?;
            let Some(chunk) = chunk else {
                return Ok(None);
            };
            if self.buffer.len() + chunk.len() > BODY_CAP {
                return Err(ClientError::BadAnswer {
                    url,
                    status: 200,
                    reason: format!("a stream message over {BODY_CAP} bytes"),
                });
            }
            self.buffer
                .push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
        }
    }
}

/// A message block; `None` for a comment-only block.
fn parse(block: &str) -> Option<Message> {
    let mut message = Message {
        id: None,
        event: "message".into(),
        data: String::new(),
    };
    let mut fields = false;
    for line in block.lines() {
        if line.is_empty() || line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        fields = true;
        match field {
            "id" => message.id = Some(value.to_string()),
            "event" => message.event = value.to_string(),
            "data" => {
                if !message.data.is_empty() {
                    message.data.push('\n');
                }
                message.data.push_str(value);
            }
            _ => {}
        }
    }
    fields.then_some(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_become_messages_and_comments_vanish() {
        assert_eq!(parse(":heartbeat\n\n"), None);
        assert_eq!(
            parse("id: 7\nevent: goal.closed\ndata: {\"a\":1}\n\n"),
            Some(Message {
                id: Some("7".into()),
                event: "goal.closed".into(),
                data: "{\"a\":1}".into(),
            })
        );
        let two_lines = parse("data: a\ndata: b\n\n").expect("a message");
        assert_eq!(
            (two_lines.event.as_str(), two_lines.data.as_str()),
            ("message", "a\nb")
        );
    }
}
