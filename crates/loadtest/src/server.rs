//! The server a run without `--url` loads: `chainsig serve`'s service in this process on
//! 127.0.0.1:0, holding one random key in a throwaway keystore that is deleted with the run.

use anyhow::Context;
use chainsig_core::Registry;
use chainsig_eth::keystore::{self, Kdf};
use chainsig_eth::PrivateKey;
use chainsig_server::batcher::BatcherConfig;
use chainsig_server::{AppState, Limits};
use rand::RngCore;
use zeroize::Zeroizing;

/// A server in this process on 127.0.0.1:0 with one random key in a throwaway keystore.
pub(crate) struct InProcess {
    pub(crate) url: url::Url,
    shutdown: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    _dir: tempfile::TempDir,
}

impl InProcess {
    /// Starts the server with the verification backends of `registry`.
    pub(crate) async fn start(registry: Registry) -> anyhow::Result<InProcess> {
        let dir = tempfile::tempdir().context("cannot make a temporary keys directory")?;
        let key = loop {
            let mut bytes = Zeroizing::new([0u8; 32]);
            rand::rngs::OsRng.fill_bytes(&mut bytes[..]);
            if let Ok(key) = PrivateKey::from_bytes(&bytes) {
                break key;
            }
        };
        let mut password = Zeroizing::new([0u8; 16]);
        rand::rngs::OsRng.fill_bytes(&mut password[..]);
        let password = Zeroizing::new(hex::encode(&password[..]));
        // A cheap KDF: the key is random, used for this run only, and deleted with the directory.
        let text = keystore::encrypt(&key, password.as_bytes(), Kdf::Pbkdf2 { c: 2 })
            .map_err(|e| anyhow::anyhow!("throwaway keystore: {e}"))?;
        std::fs::write(dir.path().join("loadtest.json"), text)?;
        std::fs::write(dir.path().join("loadtest.pass"), password.as_bytes())?;
        let signer = chainsig_server::keys::load_dir(dir.path())
            .map_err(|e| anyhow::anyhow!("throwaway keystore: {e}"))?;
        let state = AppState::new(
            signer,
            registry,
            None,
            Limits::default(),
            BatcherConfig::default(),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("cannot listen on 127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let (shutdown, stop) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(chainsig_server::serve(listener, state, async {
            let _ = stop.await;
        }));
        let url = url::Url::parse(&format!("http://{addr}/"))?;
        Ok(InProcess {
            url,
            shutdown,
            task,
            _dir: dir,
        })
    }

    pub(crate) async fn stop(self) {
        let _ = self.shutdown.send(());
        let _ = self.task.await;
    }
}
