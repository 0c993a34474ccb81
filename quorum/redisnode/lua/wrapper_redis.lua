  call = function(cmd, ...)
${template "wrapper_guard.lua" .Call}
  end,
  pcall = function(cmd, ...)
${template "wrapper_guard.lua" .PCall}
  end,
