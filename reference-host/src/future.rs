//! The boxed future the `Worker` and `Verifier` traits return, so they stay
//! object-safe (webhook and criteria implementations plug in behind them).

use std::future::Future;
use std::pin::Pin;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
