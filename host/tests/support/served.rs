//! A harness runtime served in this test process on its own task, until the test stops it:
//! what the server tests share (callers, trusted delegators, the card's security).
#![allow(dead_code)]

use tiny_harness::app::runtime::Runtime;
use tokio::sync::oneshot;

/// A runtime serving on loopback; [`Served::stop`] ends it and waits for it.
pub struct Served {
    /// `http://` and the address it listens on.
    pub base_url: String,
    stop: Option<oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<()>,
}

impl Served {
    /// Serves `runtime` until [`Served::stop`].
    pub fn start(runtime: Runtime) -> Served {
        let base_url = format!("http://{}", runtime.local_addr());
        let (stop, stopped) = oneshot::channel::<()>();
        let done = tokio::spawn(async move {
            runtime
                .serve(async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        Served {
            base_url,
            stop: Some(stop),
            done,
        }
    }

    /// Stops serving and waits until the runtime has shut down.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = self.done.await;
    }
}
