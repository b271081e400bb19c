//! Long calls off the UI thread: a [`Job`] runs one closure on its own thread and holds its
//! result until the panel takes it; the window is asked to repaint when it is done, so a slow
//! `systemctl` or a Telegram round trip never freezes a frame.

use std::sync::Arc;

use parking_lot::Mutex;

/// One call running (or finished) in the background.
pub struct Job<T> {
    result: Arc<Mutex<Option<T>>>,
}

impl<T: Send + 'static> Job<T> {
    /// Starts `work` on a new thread; `ctx` repaints when it ends.
    pub fn start(ctx: &egui::Context, work: impl FnOnce() -> T + Send + 'static) -> Job<T> {
        let result = Arc::new(Mutex::new(None));
        let slot = Arc::clone(&result);
        let ctx = ctx.clone();
        std::thread::spawn(move || {
            let value = work();
            *slot.lock() = Some(value);
            ctx.request_repaint();
        });
        Job { result }
    }

    /// The result, once: `None` while the call runs.
    pub fn take(&self) -> Option<T> {
        self.result.lock().take()
    }
}

/// A panel's one job at a time: what it is doing (for the spinner's words) and its result.
pub struct Running<T> {
    job: Option<(String, Job<T>)>,
}

impl<T: Send + 'static> Default for Running<T> {
    fn default() -> Self {
        Running { job: None }
    }
}

impl<T: Send + 'static> Running<T> {
    /// Starts `work` unless a job is running already (a second click waits for the first).
    pub fn start(
        &mut self,
        ctx: &egui::Context,
        doing: impl Into<String>,
        work: impl FnOnce() -> T + Send + 'static,
    ) {
        if self.job.is_none() {
            self.job = Some((doing.into(), Job::start(ctx, work)));
        }
    }

    /// The finished job's result, once.
    pub fn poll(&mut self) -> Option<T> {
        let value = self.job.as_ref()?.1.take()?;
        self.job = None;
        Some(value)
    }

    /// What the running job is doing, when one runs.
    pub fn doing(&self) -> Option<&str> {
        self.job.as_ref().map(|(doing, _)| doing.as_str())
    }

    /// A spinner with the running job's words, when one runs.
    pub fn show(&self, ui: &mut egui::Ui) {
        if let Some(doing) = self.doing() {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label(doing);
            });
        }
    }
}
