//! The write deadline: a connection whose answer the client stops reading
//! is closed once no byte could be written for the deadline. Without it a
//! client that sent requests and never read the answers kept each
//! connection, and the answer waiting in it, for as long as it liked (100
//! such list requests held about 1 GB).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// A stream whose writes fail with `TimedOut` once they made no progress
/// for `timeout`. Reads pass through: how long a client may take to send
/// a request is the header deadline's business.
pub struct WriteDeadline<S> {
    inner: S,
    timeout: Duration,
    /// Armed at the first write that could not go on, cleared by any
    /// progress.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<S> WriteDeadline<S> {
    pub fn new(inner: S, timeout: Duration) -> WriteDeadline<S> {
        WriteDeadline {
            inner,
            timeout,
            stalled: None,
        }
    }

    /// What a write that could not go on answers: still pending, or the
    /// deadline's error once it passed.
    fn stalled<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let timeout = self.timeout;
        let sleep = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client read nothing for the write deadline",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn progressed<T>(
        &mut self,
        poll: Poll<io::Result<T>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<T>> {
        match poll {
            Poll::Ready(result) => {
                self.stalled = None;
                Poll::Ready(result)
            }
            Poll::Pending => self.stalled(cx),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteDeadline<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.progressed(poll, cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.progressed(poll, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_flush(cx);
        this.progressed(poll, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.progressed(poll, cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_write_nobody_reads_fails_at_the_deadline_and_progress_resets_it() {
        let (near, mut far) = tokio::io::duplex(64);
        let mut stream = WriteDeadline::new(near, Duration::from_secs(10));
        // 64 bytes fit; the next write waits for a reader.
        stream.write_all(&[0u8; 64]).await.expect("fits");
        let write = tokio::spawn(async move {
            let result = stream.write_all(&[1u8; 64]).await;
            (stream, result)
        });
        tokio::time::sleep(Duration::from_secs(9)).await;
        assert!(!write.is_finished(), "failed before its deadline");
        // The reader takes a little: progress, and a new deadline.
        let mut some = [0u8; 32];
        far.read_exact(&mut some).await.expect("reads");
        tokio::time::sleep(Duration::from_secs(9)).await;
        assert!(
            !write.is_finished(),
            "the deadline was not reset by progress"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (_stream, result) = write.await.expect("the writer");
        let error = result.expect_err("nothing read for 10 s");
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
    }
}
