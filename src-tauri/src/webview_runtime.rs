//! The WebView2 runtime, on Windows. The window is a WebView2, and a Windows without its
//! runtime (Windows 10 before 21H2, a trimmed image, a runtime removed) must be told so, not
//! left with an app that vanishes: Tauri's window set-up is where it fails, and before that
//! it may not survive at all (under Wine, which has no runtime, the event loop's set-up ends
//! in a page fault before any message). So the app asks first, before anything of the window
//! exists: WebView2's own loader (`GetAvailableCoreWebView2BrowserVersionString`, through
//! `tauri::webview_version`) says whether a runtime is there for this account, and when none
//! is, a native dialog says so with the link to Microsoft's download page and the app ends.
//! Elsewhere the check is a no-op: Linux's WebKitGTK is a package dependency.

/// Where Microsoft offers the runtime.
#[cfg(any(windows, test))]
pub const DOWNLOAD_URL: &str = "https://developer.microsoft.com/microsoft-edge/webview2/";

/// The dialog's title (crates/debugtop-cli/tests/installer.rs finds the dialog by it).
#[cfg(any(windows, test))]
const TITLE: &str = "debugtop needs the WebView2 runtime";

/// What the dialog says; `why` is the loader's own answer.
#[cfg(any(windows, test))]
fn message(why: &str) -> String {
    format!(
        "debugtop's window is drawn by the Microsoft Edge WebView2 Runtime, and this computer \
         has none for this account ({why}).\n\nGet it from Microsoft: {DOWNLOAD_URL}\n(the \
         Evergreen Bootstrapper or Standalone Installer), then start debugtop again.\n\n\
         debugtop-cli works without it."
    )
}

/// Whether the window can be made here; `false` once the user has been told why not.
#[cfg(windows)]
pub fn present_or_explained() -> bool {
    use rfd::{MessageButtons, MessageDialog, MessageDialogResult, MessageLevel};
    let Err(why) = tauri::webview_version() else {
        return true;
    };
    let open = "Open the download page";
    let answer = MessageDialog::new()
        .set_level(MessageLevel::Error)
        .set_title(TITLE)
        .set_description(message(&why.to_string()))
        .set_buttons(MessageButtons::OkCancelCustom(open.into(), "Close".into()))
        .show();
    if answer == MessageDialogResult::Custom(open.into()) {
        // Explorer hands a URL to the default browser.
        if let Err(e) = std::process::Command::new("explorer.exe")
            .arg(DOWNLOAD_URL)
            .spawn()
        {
            eprintln!("debugtop: cannot open {DOWNLOAD_URL}: {e}");
        }
    }
    false
}

/// Whether the window can be made here: no runtime to check outside Windows.
#[cfg(not(windows))]
pub fn present_or_explained() -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_the_runtime_its_link_and_the_cli() {
        let m = message("0x80070002");
        assert!(m.contains("WebView2 Runtime"), "{m}");
        assert!(m.contains(DOWNLOAD_URL), "{m}");
        assert!(m.contains("0x80070002"), "the loader's answer: {m}");
        assert!(m.contains("debugtop-cli works without it"), "{m}");
        assert!(TITLE.contains("WebView2"));
    }
}
