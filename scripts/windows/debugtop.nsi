; debugtop's Windows setup: a 64-bit NSIS installer built offline by Debian's makensis
; (scripts/dist-windows.sh; crates/debugtop-cli/tests/installer.rs builds and runs it under Wine).
;
;   makensis -DVERSION=0.1.0 -DSOURCE=<folder with debugtop.exe, debugtop-cli.exe and
;            WebView2Loader.dll> -DOUTFILE=<setup.exe> scripts/windows/debugtop.nsi
;   (-DCOMPRESSOR=zlib for a quicker build; lzma, solid, by default)
;
; What it does (docs/platforms.md, "Installing on Windows"):
; - per user by default, no administrator: %LOCALAPPDATA%\Programs\debugtop, the user's Start
;   menu, HKCU's Apps list and the user's PATH; /ALLUSERS installs for the machine (Program
;   Files, the common Start menu, HKLM, the machine's PATH), asking for elevation when needed;
; - the folder on PATH is bin\, which holds debugtop-cli.exe alone (no DLL lands on PATH);
; - /S installs silently, /D=<folder> (last, unquoted) chooses the folder; exit code 0 when
;   installed;
; - an upgrade installs over the previous version of the same mode, in its folder; the
;   user's settings (%APPDATA%\dev.debugtop.app) are never touched, by setup or uninstall;
; - the uninstaller removes exactly what setup wrote: its files, the shortcut, its registry
;   key and the PATH entry it added (not one that was there before), and the folder if it is
;   then empty.
; - no WebView2 runtime: setup says so, with the link, and installs anyway (the CLI needs no
;   runtime); the app itself says so too when started without it.

Unicode true
Target amd64-unicode
ManifestDPIAware true
RequestExecutionLevel user

!ifndef VERSION | SOURCE | OUTFILE
  !error "usage: makensis -DVERSION=x.y.z -DSOURCE=<folder> -DOUTFILE=<setup.exe> debugtop.nsi"
!endif
!ifndef COMPRESSOR
  !define COMPRESSOR lzma
!endif
SetCompressor /SOLID ${COMPRESSOR}

!define APP "debugtop"
!define PUBLISHER "The debugtop authors"
!define IDENTIFIER "dev.debugtop.app"
!define APPS_KEY "Software\Microsoft\Windows\CurrentVersion\Uninstall"
!define UNINSTALL_KEY "${APPS_KEY}\debugtop"
!define HKCU_NUMBER 2147483649
!define HKLM_NUMBER 2147483650
!define USER_ENVIRONMENT "Environment"
!define MACHINE_ENVIRONMENT "SYSTEM\CurrentControlSet\Control\Session Manager\Environment"
!define WEBVIEW2_URL "https://developer.microsoft.com/microsoft-edge/webview2/"
!define WEBVIEW2_CLIENT "Microsoft\EdgeUpdate\Clients\{F3017226-FE2A-4295-8BDF-00C3A9A7E4C5}"
; makensis works in this folder (unless /NOCD): paths below are relative to it, SOURCE and
; OUTFILE are best given absolute.
!define ICON "../../icons/icon.ico"
; Windows' elevation codes, as exit codes of a /ALLUSERS run that could not be elevated.
!define ERROR_ELEVATION_REQUIRED 740
!define ERROR_CANCELLED 1223

; x.y.z[-pre] → x.y.z.0 for the version resource.
!searchparse /noerrors "${VERSION}" "" V_MAJOR "." V_MINOR "." V_PATCH "-"
!ifndef V_PATCH
  !searchparse "${VERSION}" "" V_MAJOR "." V_MINOR "." V_PATCH
!endif

Name "${APP}"
OutFile "${OUTFILE}"
BrandingText "${APP} ${VERSION}"
ShowInstDetails show
ShowUninstDetails show

VIProductVersion "${V_MAJOR}.${V_MINOR}.${V_PATCH}.0"
VIAddVersionKey "ProductName" "${APP}"
VIAddVersionKey "CompanyName" "${PUBLISHER}"
VIAddVersionKey "FileDescription" "${APP} ${VERSION} setup"
VIAddVersionKey "FileVersion" "${VERSION}"
VIAddVersionKey "ProductVersion" "${VERSION}"
VIAddVersionKey "LegalCopyright" "MIT license, ${PUBLISHER}"

!include MUI2.nsh
!include LogicLib.nsh
!include FileFunc.nsh
!include "envpath.nsh"

!define MUI_ICON "${ICON}"
!define MUI_UNICON "${ICON}"
!define MUI_ABORTWARNING
!define MUI_FINISHPAGE_RUN "$INSTDIR\debugtop.exe"
!define MUI_FINISHPAGE_RUN_TEXT "Open debugtop"
!define MUI_FINISHPAGE_TEXT "debugtop is in the Start menu.$\r$\n$\r$\ndebugtop-cli is on your PATH for terminals opened from now on ($INSTDIR\bin).$\r$\n$\r$\nTo remove debugtop: Settings › Apps, or $INSTDIR\uninstall.exe."
!insertmacro MUI_PAGE_DIRECTORY
!insertmacro MUI_PAGE_INSTFILES
!insertmacro MUI_PAGE_FINISH
!insertmacro MUI_UNPAGE_CONFIRM
!insertmacro MUI_UNPAGE_INSTFILES
!insertmacro MUI_LANGUAGE "English"

!insertmacro DEBUGTOP_PATH_ADD
!insertmacro DEBUGTOP_PATH_REMOVE

Var AllUsers      ; 1 for /ALLUSERS
Var PrevDir       ; the folder of the version installed before, in this mode
Var PrevVersion
Var CreatedParent ; the install folder's parent when setup made it (%LOCALAPPDATA%\Programs)

; ------------------------------------------------------------------------------------------
; Shared by setup and the uninstaller.

; The mode's shell folders and registry root (SHCTX); $AllUsers decides.
!macro DEBUGTOP_USE_MODE
  ${If} $AllUsers = 1
    SetShellVarContext all
  ${Else}
    SetShellVarContext current
  ${EndIf}
!macroend

; /ALLUSERS without an administrator's rights: run this program again elevated (Windows asks,
; UAC), wait for it, and end with what it did. $R0 holds the arguments; $R1 what to append to
; them (/D=…, _?=…). Ends the program.
!macro DEBUGTOP_ELEVATE UN CHECK
  ${${UN}GetOptions} $R0 "/ELEVATED" $0
  ${IfNot} ${Errors}
    MessageBox MB_OK|MB_ICONSTOP "A machine-wide install (/ALLUSERS) needs an administrator's rights, and this account has none. Run it from an account that has, or install for yourself (without /ALLUSERS)." /SD IDOK
    SetErrorLevel ${ERROR_ELEVATION_REQUIRED}
    Quit
  ${EndIf}
  ClearErrors
  ExecShellWait "runas" "$EXEPATH" "$R0 /ELEVATED $R1"
  ${If} ${Errors}
    SetErrorLevel ${ERROR_CANCELLED}
    Quit
  ${EndIf}
  Call ${UN}${CHECK}
  Quit
!macroend

!macro DEBUGTOP_IS_ADMIN RESULT
  UserInfo::GetAccountType
  Pop ${RESULT}
!macroend

; Waits until nothing runs debugtop's programs from $INSTDIR (a running program cannot be
; replaced or deleted): asks to close them, Retry or Cancel (silent: cancels, exit code 5).
!macro DEBUGTOP_BUSY FILE
  ${If} ${FileExists} "${FILE}"
    ClearErrors
    FileOpen $0 "${FILE}" a
    ${If} ${Errors}
      StrCpy $1 "busy"
    ${Else}
      FileClose $0
    ${EndIf}
  ${EndIf}
!macroend

!macro DEBUGTOP_NOT_RUNNING UN
Function ${UN}DebugtopNotRunning
  Push $0
  Push $1
  retry:
  StrCpy $1 ""
  !insertmacro DEBUGTOP_BUSY "$INSTDIR\debugtop.exe"
  !insertmacro DEBUGTOP_BUSY "$INSTDIR\bin\debugtop-cli.exe"
  ${If} $1 == "busy"
    MessageBox MB_RETRYCANCEL|MB_ICONEXCLAMATION "debugtop or debugtop-cli is running from $INSTDIR. Close it (a window, a terminal's watch or serve), then press Retry." /SD IDCANCEL IDRETRY retry
    DetailPrint "debugtop is running from $INSTDIR: nothing was changed"
    SetErrorLevel 5
    Quit
  ${EndIf}
  Pop $1
  Pop $0
FunctionEnd
!macroend
!insertmacro DEBUGTOP_NOT_RUNNING ""
!insertmacro DEBUGTOP_NOT_RUNNING "un."

; ------------------------------------------------------------------------------------------
; Setup.

; Whether the WebView2 runtime (Evergreen) is installed, by the registry keys Microsoft
; documents for installers: its client's "pv" for the machine (64-bit Windows keeps it in the
; 32-bit view) or for this user. $0: the version, or "".
Function DebugtopWebView2Version
  ReadRegStr $0 HKLM "SOFTWARE\WOW6432Node\${WEBVIEW2_CLIENT}" "pv"
  ${If} $0 == ""
  ${OrIf} $0 == "0.0.0.0"
    ReadRegStr $0 HKLM "SOFTWARE\${WEBVIEW2_CLIENT}" "pv"
  ${EndIf}
  ${If} $0 == ""
  ${OrIf} $0 == "0.0.0.0"
    ReadRegStr $0 HKCU "Software\${WEBVIEW2_CLIENT}" "pv"
  ${EndIf}
  ${If} $0 == "0.0.0.0"
    StrCpy $0 ""
  ${EndIf}
FunctionEnd

; After an elevated /ALLUSERS run: 0 when the machine's Apps list now names this version.
Function DebugtopInstalledForAll
  ReadRegStr $0 HKLM "${UNINSTALL_KEY}" "DisplayVersion"
  ${If} $0 == "${VERSION}"
    SetErrorLevel 0
  ${Else}
    SetErrorLevel 2
  ${EndIf}
FunctionEnd

Function .onInit
  ${GetParameters} $R0
  StrCpy $AllUsers 0
  ClearErrors
  ${GetOptions} $R0 "/ALLUSERS" $0
  ${IfNot} ${Errors}
    StrCpy $AllUsers 1
  ${EndIf}
  ClearErrors
  ${GetOptions} $R0 "/CURRENTUSER" $0
  ${IfNot} ${Errors}
    StrCpy $AllUsers 0
  ${EndIf}
  ${If} $AllUsers = 1
    !insertmacro DEBUGTOP_IS_ADMIN $0
    ${If} $0 != "Admin"
      ; /D= was taken off the arguments by NSIS: give it again ($INSTDIR is empty without it).
      StrCpy $R1 ""
      ${If} $INSTDIR != ""
        StrCpy $R1 "/D=$INSTDIR"
      ${EndIf}
      !insertmacro DEBUGTOP_ELEVATE "" DebugtopInstalledForAll
    ${EndIf}
  ${EndIf}
  !insertmacro DEBUGTOP_USE_MODE

  ReadRegStr $PrevDir SHCTX "${UNINSTALL_KEY}" "InstallLocation"
  ReadRegStr $PrevVersion SHCTX "${UNINSTALL_KEY}" "DisplayVersion"
  ${If} $INSTDIR == ""
    ${If} $PrevDir != ""
      StrCpy $INSTDIR $PrevDir
    ${ElseIf} $AllUsers = 1
      StrCpy $INSTDIR "$PROGRAMFILES64\${APP}"
    ${Else}
      StrCpy $INSTDIR "$LOCALAPPDATA\Programs\${APP}"
    ${EndIf}
  ${EndIf}

  Call DebugtopWebView2Version
  ${If} $0 == ""
    MessageBox MB_YESNO|MB_ICONINFORMATION "debugtop's window needs the Microsoft Edge WebView2 Runtime, which is not installed on this computer (Windows 11 and recent Windows 10 include it).$\r$\n$\r$\nGet it from Microsoft: ${WEBVIEW2_URL}$\r$\n$\r$\ndebugtop installs anyway; debugtop-cli works without it. Open that page now?" /SD IDNO IDNO +2
    ExecShell "open" "${WEBVIEW2_URL}"
  ${EndIf}
FunctionEnd

Section "debugtop" SecMain
  SectionIn RO
  ${If} $PrevVersion != ""
    DetailPrint "Upgrading debugtop $PrevVersion in $PrevDir to ${VERSION}"
  ${EndIf}
  ; The previous version lived elsewhere (/D= to another folder): its own uninstaller removes
  ; it first, in place, so nothing of it is left behind (its PATH entry included).
  ${If} $PrevDir != ""
  ${AndIf} $PrevDir != $INSTDIR
  ${AndIf} ${FileExists} "$PrevDir\uninstall.exe"
    ${If} $AllUsers = 1
      StrCpy $0 "/ALLUSERS"
    ${Else}
      StrCpy $0 "/CURRENTUSER"
    ${EndIf}
    ExecWait '"$PrevDir\uninstall.exe" /S $0 _?=$PrevDir'
    Delete "$PrevDir\uninstall.exe"
    RMDir "$PrevDir"
  ${EndIf}
  Call DebugtopNotRunning

  ; A fresh account has no %LOCALAPPDATA%\Programs: the folder setup makes for the install's
  ; sake is written down, and removed by the uninstaller when nothing else is in it.
  StrCpy $CreatedParent ""
  ${GetParent} "$INSTDIR" $0
  ${If} $0 != ""
  ${AndIfNot} ${FileExists} "$0\*.*"
    StrCpy $CreatedParent $0
  ${EndIf}

  SetOutPath "$INSTDIR"
  File "${SOURCE}/debugtop.exe"
  File "${SOURCE}/WebView2Loader.dll"
  ; The Apps list's icon, from icons/ (the same icon.ico the app's .exe embeds).
  File "/oname=debugtop.ico" "${ICON}"
  SetOutPath "$INSTDIR\bin"
  File "${SOURCE}/debugtop-cli.exe"
  SetOutPath "$INSTDIR"
  WriteUninstaller "$INSTDIR\uninstall.exe"
  CreateShortcut "$SMPROGRAMS\${APP}.lnk" "$INSTDIR\debugtop.exe" "" "$INSTDIR\debugtop.exe" 0 \
    SW_SHOWNORMAL "" "What your debug servers really have running, and what they left behind"

  ; The Apps list (Settings › Apps, and Programs and Features).
  ; A fresh account's HKCU has no Apps list key: when setup makes it, it says so, and the
  ; uninstaller removes it again if nothing else is registered there by then.
  ClearErrors
  EnumRegKey $0 SHCTX "${APPS_KEY}" 0
  ${If} ${Errors}
    StrCpy $1 1
  ${Else}
    StrCpy $1 0
  ${EndIf}
  ${If} $AllUsers = 1
    StrCpy $0 "/ALLUSERS"
  ${Else}
    StrCpy $0 "/CURRENTUSER"
  ${EndIf}
  ${If} $1 = 1
    WriteRegDWORD SHCTX "${UNINSTALL_KEY}" "CreatedAppsKey" 1
  ${EndIf}
  WriteRegStr SHCTX "${UNINSTALL_KEY}" "DisplayName" "${APP}"
  WriteRegStr SHCTX "${UNINSTALL_KEY}" "DisplayVersion" "${VERSION}"
  WriteRegStr SHCTX "${UNINSTALL_KEY}" "Publisher" "${PUBLISHER}"
  WriteRegStr SHCTX "${UNINSTALL_KEY}" "DisplayIcon" "$INSTDIR\debugtop.ico"
  WriteRegStr SHCTX "${UNINSTALL_KEY}" "InstallLocation" "$INSTDIR"
  WriteRegStr SHCTX "${UNINSTALL_KEY}" "UninstallString" '"$INSTDIR\uninstall.exe" $0'
  WriteRegStr SHCTX "${UNINSTALL_KEY}" "QuietUninstallString" '"$INSTDIR\uninstall.exe" $0 /S'
  WriteRegDWORD SHCTX "${UNINSTALL_KEY}" "NoModify" 1
  WriteRegDWORD SHCTX "${UNINSTALL_KEY}" "NoRepair" 1
  ${If} $CreatedParent != ""
    WriteRegStr SHCTX "${UNINSTALL_KEY}" "CreatedParent" $CreatedParent
  ${EndIf}
  ${GetSize} "$INSTDIR" "/S=0K" $1 $2 $3
  WriteRegDWORD SHCTX "${UNINSTALL_KEY}" "EstimatedSize" $1

  ; debugtop-cli on PATH: bin\ appended to the user's (or, /ALLUSERS, the machine's) Path.
  ; What was added is written down with the uninstall key, so the uninstaller removes that
  ; entry and no other (an entry that was already there stays).
  ${If} $AllUsers = 1
    StrCpy $R0 ${HKLM_NUMBER}
    StrCpy $R1 "${MACHINE_ENVIRONMENT}"
  ${Else}
    StrCpy $R0 ${HKCU_NUMBER}
    StrCpy $R1 "${USER_ENVIRONMENT}"
  ${EndIf}
  StrCpy $R2 "$INSTDIR\bin"
  Call DebugtopPathAdd
  ${If} $R3 == "added"
  ${OrIf} $R3 == "created"
    WriteRegStr SHCTX "${UNINSTALL_KEY}" "PathEntry" $R2
    ${If} $R3 == "created"
      WriteRegDWORD SHCTX "${UNINSTALL_KEY}" "PathValueCreated" 1
    ${EndIf}
    DetailPrint "Added $R2 to PATH"
  ${ElseIf} $R3 == "present"
    DetailPrint "$R2 is already on PATH"
  ${Else}
    DetailPrint "PATH not changed: $R3"
    MessageBox MB_OK|MB_ICONEXCLAMATION "debugtop-cli could not be put on PATH ($R3). Add $R2 to PATH yourself." /SD IDOK
  ${EndIf}

  Call DebugtopWebView2Version
  ${If} $0 == ""
    DetailPrint "The WebView2 runtime is missing: debugtop's window needs it (${WEBVIEW2_URL})"
  ${EndIf}
SectionEnd

; ------------------------------------------------------------------------------------------
; The uninstaller.

Function un.DebugtopRemovedForAll
  ReadRegStr $0 HKLM "${UNINSTALL_KEY}" "InstallLocation"
  ${If} $0 == ""
    SetErrorLevel 0
  ${Else}
    SetErrorLevel 2
  ${EndIf}
FunctionEnd

Function un.onInit
  ${un.GetParameters} $R0
  ; The mode: as the Apps list's UninstallString says, else the one whose key names this
  ; folder.
  StrCpy $AllUsers 0
  ReadRegStr $0 HKLM "${UNINSTALL_KEY}" "InstallLocation"
  ${If} $0 == $INSTDIR
    StrCpy $AllUsers 1
  ${EndIf}
  ClearErrors
  ${un.GetOptions} $R0 "/ALLUSERS" $0
  ${IfNot} ${Errors}
    StrCpy $AllUsers 1
  ${EndIf}
  ClearErrors
  ${un.GetOptions} $R0 "/CURRENTUSER" $0
  ${IfNot} ${Errors}
    StrCpy $AllUsers 0
  ${EndIf}
  ${If} $AllUsers = 1
    !insertmacro DEBUGTOP_IS_ADMIN $0
    ${If} $0 != "Admin"
      StrCpy $R1 "_?=$INSTDIR"
      !insertmacro DEBUGTOP_ELEVATE "un." DebugtopRemovedForAll
    ${EndIf}
  ${EndIf}
  !insertmacro DEBUGTOP_USE_MODE
FunctionEnd

Section "Uninstall"
  Call un.DebugtopNotRunning
  Delete "$INSTDIR\bin\debugtop-cli.exe"
  RMDir "$INSTDIR\bin"
  Delete "$INSTDIR\debugtop.exe"
  Delete "$INSTDIR\WebView2Loader.dll"
  Delete "$INSTDIR\debugtop.ico"
  Delete "$SMPROGRAMS\${APP}.lnk"

  ; The registration and the PATH entry only when they are this folder's: a stray copy of an
  ; uninstaller never unregisters another install.
  StrCpy $R4 ""
  ReadRegStr $0 SHCTX "${UNINSTALL_KEY}" "InstallLocation"
  ${If} $0 == $INSTDIR
    ReadRegStr $R4 SHCTX "${UNINSTALL_KEY}" "CreatedParent"
    ReadRegDWORD $R7 SHCTX "${UNINSTALL_KEY}" "CreatedAppsKey"
    ReadRegStr $R2 SHCTX "${UNINSTALL_KEY}" "PathEntry"
    ${If} $R2 != ""
      ReadRegDWORD $R5 SHCTX "${UNINSTALL_KEY}" "PathValueCreated"
      ${If} $R5 == ""
        StrCpy $R5 0
      ${EndIf}
      ${If} $AllUsers = 1
        StrCpy $R0 ${HKLM_NUMBER}
        StrCpy $R1 "${MACHINE_ENVIRONMENT}"
      ${Else}
        StrCpy $R0 ${HKCU_NUMBER}
        StrCpy $R1 "${USER_ENVIRONMENT}"
      ${EndIf}
      Call un.DebugtopPathRemove
      DetailPrint "PATH: $R2 $R3"
    ${EndIf}
    DeleteRegKey SHCTX "${UNINSTALL_KEY}"
    ; The Apps list's own key, when this install made it and nothing else is registered
    ; there now (a key that was there before stays, empty or not).
    ${If} $R7 = 1
      DeleteRegKey /ifempty SHCTX "${APPS_KEY}"
    ${EndIf}
  ${EndIf}

  Delete "$INSTDIR\uninstall.exe"
  ; Only when empty: anything the user put there stays. Settings (%APPDATA%\${IDENTIFIER})
  ; and the window's WebView2 data (%LOCALAPPDATA%\${IDENTIFIER}) are the user's: kept.
  RMDir "$INSTDIR"
  ${If} $R4 != ""
    RMDir "$R4"
  ${EndIf}
SectionEnd
