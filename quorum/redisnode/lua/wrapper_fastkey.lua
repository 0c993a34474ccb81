local bi, ai, hold, holds, ch = 0, 0, 0, nil, 0
  if st.ttl then
    ch, bi = 1, st.oi or 0
    if st.m then ai, hold, holds = st.mi or __rlp_own(st.m) or 0, st.ttl, st.ttls end
  elseif st.m then
    ai = st.mi or __rlp_own(st.m) or 0
    bi = ai
  end