  call = function(cmd, ...)
__RLP_GUARD_CALL
  end,
  pcall = function(cmd, ...)
__RLP_GUARD_PCALL
  end,
