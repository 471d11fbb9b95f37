; The PATH entry of debugtop's setup: added to and removed from one `Path` value in the
; registry (HKCU\Environment for a per-user install, the machine's Session Manager\Environment
; for /ALLUSERS) without ever holding the value in an NSIS variable. Debian's makensis is the
; 1,024-character build (NSIS_MAX_STRLEN): a PATH read into a variable is cut there, and
; writing it back would destroy the rest. So the value is read, searched, spliced and written
; in memory the System plugin allocates (advapi32's Reg*W, kernel32's lstr*W, shlwapi's
; StrStrIW): only the folder's own name passes through NSIS.
;
; The entry is appended as ";<dir>" (or "<dir>;" after a value that already ends with ";", or
; "<dir>" alone in an empty value), so removing it is exact: in ";" + value + ";", the first
; ";<dir>;" loses its ";<dir>" and the outer two ";" go — the value is what it was before the
; install, whatever was added before or after it since.
;
; DebugtopPathAdd and un.DebugtopPathRemove take: $R0 the root key (0x80000001 HKCU, 0x80000002 HKLM), $R1 the key, $R2
; the folder. They return in $R3: "added" (an existing value grew), "created" (the value did
; not exist), "present" (an entry equal to the folder, in any case, was already there: nothing
; written) / "removed", "absent"; or "error: …". Both broadcast WM_SETTINGCHANGE after a
; write, so Explorer (and what it starts next) sees the new PATH.

!include LogicLib.nsh
!include WinMessages.nsh

!define /ifndef ERROR_FILE_NOT_FOUND 2
!define /ifndef REG_SZ 1
!define /ifndef REG_EXPAND_SZ 2
; KEY_QUERY_VALUE | KEY_SET_VALUE
!define DEBUGTOP_PATH_KEY_ACCESS 3

; What both share.
!macro DEBUGTOP_PATH_FUNCTIONS UN

; Opens the key and reads Path into fresh memory with room for `extra` more characters.
; In: $R0 $R1, $R6 extra characters. Out: $0 error code (0 ok), $1 the key, $2 the value's
; type, $4 the buffer (NUL-terminated; empty when the value does not exist), $5 1 when the
; value does not exist. The caller frees $4 and closes $1.
Function ${UN}DebugtopPathRead
  StrCpy $4 0
  StrCpy $5 0
  System::Call 'advapi32::RegOpenKeyExW(p R0, w R1, i 0, i ${DEBUGTOP_PATH_KEY_ACCESS}, *p .r1) i .r0'
  ${If} $0 <> 0
    Return
  ${EndIf}
  StrCpy $2 ${REG_EXPAND_SZ}
  StrCpy $3 0
  System::Call 'advapi32::RegQueryValueExW(p r1, w "Path", p 0, *i .r2, p 0, *i .r3) i .r0'
  ${If} $0 = ${ERROR_FILE_NOT_FOUND}
    StrCpy $0 0
    StrCpy $5 1
    StrCpy $2 ${REG_EXPAND_SZ}
    StrCpy $3 0
  ${ElseIf} $0 <> 0
    System::Call 'advapi32::RegCloseKey(p r1)'
    Return
  ${ElseIf} $2 <> ${REG_SZ}
  ${AndIf} $2 <> ${REG_EXPAND_SZ}
    StrCpy $0 "Path is not a string value (type $2)"
    System::Call 'advapi32::RegCloseKey(p r1)'
    Return
  ${EndIf}
  ; The value's bytes, then room for the extra characters and two NULs (zeroed memory: the
  ; value is NUL-terminated even when it was stored without one).
  IntOp $6 $R6 + 4
  IntOp $6 $6 * 2
  IntOp $6 $6 + $3
  System::Alloc $6
  Pop $4
  ${If} $3 > 0
    System::Call 'advapi32::RegQueryValueExW(p r1, w "Path", p 0, p 0, p r4, *i r3 r3) i .r0'
    ${If} $0 <> 0
      System::Free $4
      StrCpy $4 0
      System::Call 'advapi32::RegCloseKey(p r1)'
    ${EndIf}
  ${EndIf}
FunctionEnd

; Writes the NUL-terminated string at $4 as Path (type $2) into the open key $1; an empty
; value the install created ($R5 = 1) is deleted instead. Out: $0 (0 ok).
Function ${UN}DebugtopPathWrite
  System::Call 'kernel32::lstrlenW(p r4) i .r6'
  ${If} $6 = 0
  ${AndIf} $R5 = 1
    System::Call 'advapi32::RegDeleteValueW(p r1, w "Path") i .r0'
  ${Else}
    IntOp $6 $6 + 1
    IntOp $6 $6 * 2
    System::Call 'advapi32::RegSetValueExW(p r1, w "Path", i 0, i r2, p r4, i r6) i .r0'
  ${EndIf}
  ${If} $0 = 0
    SendMessage ${HWND_BROADCAST} ${WM_SETTINGCHANGE} 0 "STR:Environment" /TIMEOUT=5000
  ${EndIf}
FunctionEnd

; ";" + the string at $4 + ";" in fresh memory: $7 (freed by the caller).
Function ${UN}DebugtopPathWrapped
  System::Call 'kernel32::lstrlenW(p r4) i .r6'
  IntOp $6 $6 + 4
  IntOp $6 $6 * 2
  System::Alloc $6
  Pop $7
  System::Call 'kernel32::lstrcpyW(p r7, w ";")'
  System::Call 'kernel32::lstrcatW(p r7, p r4)'
  System::Call 'kernel32::lstrcatW(p r7, w ";")'
FunctionEnd

!macroend

; Setup's: DebugtopPathAdd.
!macro DEBUGTOP_PATH_ADD
!insertmacro DEBUGTOP_PATH_FUNCTIONS ""
Function DebugtopPathAdd
  Push $0
  Push $1
  Push $2
  Push $3
  Push $4
  Push $5
  Push $6
  Push $7
  Push $8
  StrLen $R6 $R2
  IntOp $R6 $R6 + 2
  Call DebugtopPathRead
  ${If} $0 != 0
    StrCpy $R3 "error: the Path of $R1 cannot be read ($0)"
    Goto done
  ${EndIf}
  Call DebugtopPathWrapped
  System::Call 'shlwapi::StrStrIW(p r7, w ";$R2;") p .r8'
  System::Free $7
  ${If} $8 P<> 0
    StrCpy $R3 "present"
  ${Else}
    System::Call 'kernel32::lstrlenW(p r4) i .r6'
    ${If} $6 = 0
      System::Call 'kernel32::lstrcatW(p r4, w R2)'
    ${Else}
      ; The value's last character: ";" already separates.
      IntOp $6 $6 - 1
      IntOp $6 $6 * 2
      IntPtrOp $8 $4 + $6
      System::Call '*$8(&i2 .r6)'
      ${If} $6 = 59
        System::Call 'kernel32::lstrcatW(p r4, w "$R2;")'
      ${Else}
        System::Call 'kernel32::lstrcatW(p r4, w ";$R2")'
      ${EndIf}
    ${EndIf}
    StrCpy $R5 0
    Call DebugtopPathWrite
    ${If} $0 <> 0
      StrCpy $R3 "error: the Path of $R1 cannot be written ($0)"
    ${ElseIf} $5 = 1
      StrCpy $R3 "created"
    ${Else}
      StrCpy $R3 "added"
    ${EndIf}
  ${EndIf}
  System::Free $4
  System::Call 'advapi32::RegCloseKey(p r1)'
  done:
  Pop $8
  Pop $7
  Pop $6
  Pop $5
  Pop $4
  Pop $3
  Pop $2
  Pop $1
  Pop $0
FunctionEnd

!macroend

; The uninstaller's: un.DebugtopPathRemove, the entry DebugtopPathAdd appended; $R5 = 1 when
; the install created the value (it is deleted once nothing else is in it).
!macro DEBUGTOP_PATH_REMOVE
!insertmacro DEBUGTOP_PATH_FUNCTIONS "un."
Function un.DebugtopPathRemove
  Push $0
  Push $1
  Push $2
  Push $3
  Push $4
  Push $5
  Push $6
  Push $7
  Push $8
  StrCpy $R6 0
  Call un.DebugtopPathRead
  ${If} $0 != 0
    StrCpy $R3 "error: the Path of $R1 cannot be read ($0)"
    Goto done
  ${EndIf}
  ${If} $5 = 1
    StrCpy $R3 "absent"
    Goto free
  ${EndIf}
  Call un.DebugtopPathWrapped
  System::Call 'shlwapi::StrStrIW(p r7, w ";$R2;") p .r8'
  ${If} $8 P= 0
    StrCpy $R3 "absent"
    System::Free $7
    Goto free
  ${EndIf}
  ; Drop ";<dir>" at $8: move what follows it (its ";" first, the NUL last) onto it.
  StrLen $6 $R2
  IntOp $6 $6 + 1
  IntOp $6 $6 * 2
  IntPtrOp $3 $8 + $6
  System::Call 'kernel32::lstrlenW(p r3) i .r6'
  IntOp $6 $6 + 1
  IntOp $6 $6 * 2
  System::Call 'kernel32::RtlMoveMemory(p r8, p r3, p r6)'
  ; Unwrap: the last ";" goes, then the value starts after the first.
  System::Call 'kernel32::lstrlenW(p r7) i .r6'
  IntOp $6 $6 - 1
  IntOp $6 $6 * 2
  IntPtrOp $3 $7 + $6
  System::Call '*$3(&i2 0)'
  IntPtrOp $3 $7 + 2
  System::Call 'kernel32::lstrcpyW(p r4, p r3)'
  System::Free $7
  Call un.DebugtopPathWrite
  ${If} $0 <> 0
    StrCpy $R3 "error: the Path of $R1 cannot be written ($0)"
  ${Else}
    StrCpy $R3 "removed"
  ${EndIf}
  free:
  System::Free $4
  System::Call 'advapi32::RegCloseKey(p r1)'
  done:
  Pop $8
  Pop $7
  Pop $6
  Pop $5
  Pop $4
  Pop $3
  Pop $2
  Pop $1
  Pop $0
FunctionEnd

!macroend
