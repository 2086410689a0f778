# Made by jkvbench --plot: run `gnuplot plots.gp` in this directory.
set style fill solid 0.85 border -1
set grid ytics
set xtics rotate by -40 nomirror
set terminal pngcairo size 1090,560 noenhanced font ',9'
set rmargin 12
set output 'throughput_trace-chat.png'
set title 'trace:chat: operations per second (higher is better)'
set key off
set logscale y
set ylabel 'ops/s'
set xrange [-0.6:14]
set yrange [*:*]
plot 'plot_trace-chat.dat' using 0:3:(0.8):2:xtic(1) with boxes lc variable
set output 'latency_trace-chat.png'
set title 'trace:chat: latency per operation in microseconds (lower is better)'
set key top left
set ylabel 'microseconds'
set style data histograms
set style histogram clustered gap 1
set xrange [*:*]
plot 'plot_trace-chat.dat' using 4:xtic(1) title 'p50', '' using 5 title 'p99', '' using 6 title 'p99.9', '' using 7 title 'max'
set style data points
unset logscale y
set output 'fsyncs_trace-chat.png'
set title 'trace:chat: fsync + fdatasync + msync calls per commit'
set key off
set ylabel 'flushes per commit'
set xrange [-0.6:14]
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
plot 'plot_trace-chat.dat' using 0:8:(0.8):2:xtic(1) with boxes lc variable
set yrange [*:*]
set xrange [*:*]
set offsets 0, 0, 0, 0
set terminal pngcairo size 1680,440 noenhanced font ',9'
set output 'percentiles_trace-chat.png'
set multiplot layout 1,3 title "trace:chat: latency by percentile (log scales; lower is better)" font ',11'
set logscale xy
set xrange [1:3843]
set yrange [0.0133333:3.43718e+06]
set xtics norotate ("0%%" 1, "90%%" 10, "99%%" 100, "99.9%%" 1000, "99.99%%" 10000, "99.999%%" 100000, "99.9999%%" 1000000)
set grid xtics ytics
set key top left opaque box
set ylabel 'microseconds'
set xlabel 'percentile'
set style data lines
set title 'journalkv, sync full'
plot 'percentiles_trace-chat.dat' index 0 using 1:3 with lines lw 1.5 lc rgb '#9400d3' dt 1 title 'delete', \
     'percentiles_trace-chat.dat' index 1 using 1:3 with lines lw 1.5 lc rgb '#009e73' dt 1 title 'truncate', \
     'percentiles_trace-chat.dat' index 2 using 1:3 with lines lw 1.5 lc rgb '#0072b2' dt 1 title 'persist', \
     'percentiles_trace-chat.dat' index 3 using 1:3 with lines lw 1.5 lc rgb '#e69f00' dt 1 title 'memory', \
     'percentiles_trace-chat.dat' index 4 using 1:3 with lines lw 1.5 lc rgb '#e51e10' dt 1 title 'off', \
     'percentiles_trace-chat.dat' index 5 using 1:3 with lines lw 1.5 lc rgb '#56b4e9' dt 1 title 'wal/default', \
     'percentiles_trace-chat.dat' index 6 using 1:3 with lines lw 1.5 lc rgb '#000000' dt 1 title 'wal2/default'
set title 'sqlite, sync full'
plot 'percentiles_trace-chat.dat' index 7 using 1:3 with lines lw 1.5 lc rgb '#9400d3' dt 1 title 'delete', \
     'percentiles_trace-chat.dat' index 8 using 1:3 with lines lw 1.5 lc rgb '#009e73' dt 1 title 'truncate', \
     'percentiles_trace-chat.dat' index 9 using 1:3 with lines lw 1.5 lc rgb '#0072b2' dt 1 title 'persist', \
     'percentiles_trace-chat.dat' index 10 using 1:3 with lines lw 1.5 lc rgb '#e69f00' dt 1 title 'memory', \
     'percentiles_trace-chat.dat' index 11 using 1:3 with lines lw 1.5 lc rgb '#e51e10' dt 1 title 'off', \
     'percentiles_trace-chat.dat' index 12 using 1:3 with lines lw 1.5 lc rgb '#56b4e9' dt 1 title 'wal/default'
set title 'lmdb, sync full'
plot 'percentiles_trace-chat.dat' index 13 using 1:3 with lines lw 1.5 lc rgb '#a0522d' dt 1 title 'default'
unset multiplot
reset
set style fill solid 0.85 border -1
set grid ytics
set xtics rotate by -40 nomirror
set terminal pngcairo size 1090,560 noenhanced font ',9'
set rmargin 12
set output 'throughput_trace-kv-cache.png'
set title 'trace:kv-cache: operations per second (higher is better)'
set key off
set logscale y
set ylabel 'ops/s'
set xrange [-0.6:14]
set yrange [*:*]
plot 'plot_trace-kv-cache.dat' using 0:3:(0.8):2:xtic(1) with boxes lc variable
set output 'latency_trace-kv-cache.png'
set title 'trace:kv-cache: latency per operation in microseconds (lower is better)'
set key top left
set ylabel 'microseconds'
set style data histograms
set style histogram clustered gap 1
set xrange [*:*]
plot 'plot_trace-kv-cache.dat' using 4:xtic(1) title 'p50', '' using 5 title 'p99', '' using 6 title 'p99.9', '' using 7 title 'max'
set style data points
unset logscale y
set output 'fsyncs_trace-kv-cache.png'
set title 'trace:kv-cache: fsync + fdatasync + msync calls per commit'
set key off
set ylabel 'flushes per commit'
set xrange [-0.6:14]
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
plot 'plot_trace-kv-cache.dat' using 0:8:(0.8):2:xtic(1) with boxes lc variable
set yrange [*:*]
set xrange [*:*]
set offsets 0, 0, 0, 0
set terminal pngcairo size 1680,440 noenhanced font ',9'
set output 'percentiles_trace-kv-cache.png'
set multiplot layout 1,3 title "trace:kv-cache: latency by percentile (log scales; lower is better)" font ',11'
set logscale xy
set xrange [1:7672.5]
set yrange [0.0266667:148616]
set xtics norotate ("0%%" 1, "90%%" 10, "99%%" 100, "99.9%%" 1000, "99.99%%" 10000, "99.999%%" 100000, "99.9999%%" 1000000)
set grid xtics ytics
set key top left opaque box
set ylabel 'microseconds'
set xlabel 'percentile'
set style data lines
set title 'journalkv, sync full'
plot 'percentiles_trace-kv-cache.dat' index 0 using 1:3 with lines lw 1.5 lc rgb '#9400d3' dt 1 title 'delete', \
     'percentiles_trace-kv-cache.dat' index 1 using 1:3 with lines lw 1.5 lc rgb '#009e73' dt 1 title 'truncate', \
     'percentiles_trace-kv-cache.dat' index 2 using 1:3 with lines lw 1.5 lc rgb '#0072b2' dt 1 title 'persist', \
     'percentiles_trace-kv-cache.dat' index 3 using 1:3 with lines lw 1.5 lc rgb '#e69f00' dt 1 title 'memory', \
     'percentiles_trace-kv-cache.dat' index 4 using 1:3 with lines lw 1.5 lc rgb '#e51e10' dt 1 title 'off', \
     'percentiles_trace-kv-cache.dat' index 5 using 1:3 with lines lw 1.5 lc rgb '#56b4e9' dt 1 title 'wal/default', \
     'percentiles_trace-kv-cache.dat' index 6 using 1:3 with lines lw 1.5 lc rgb '#000000' dt 1 title 'wal2/default'
set title 'sqlite, sync full'
plot 'percentiles_trace-kv-cache.dat' index 7 using 1:3 with lines lw 1.5 lc rgb '#9400d3' dt 1 title 'delete', \
     'percentiles_trace-kv-cache.dat' index 8 using 1:3 with lines lw 1.5 lc rgb '#009e73' dt 1 title 'truncate', \
     'percentiles_trace-kv-cache.dat' index 9 using 1:3 with lines lw 1.5 lc rgb '#0072b2' dt 1 title 'persist', \
     'percentiles_trace-kv-cache.dat' index 10 using 1:3 with lines lw 1.5 lc rgb '#e69f00' dt 1 title 'memory', \
     'percentiles_trace-kv-cache.dat' index 11 using 1:3 with lines lw 1.5 lc rgb '#e51e10' dt 1 title 'off', \
     'percentiles_trace-kv-cache.dat' index 12 using 1:3 with lines lw 1.5 lc rgb '#56b4e9' dt 1 title 'wal/default'
set title 'lmdb, sync full'
plot 'percentiles_trace-kv-cache.dat' index 13 using 1:3 with lines lw 1.5 lc rgb '#a0522d' dt 1 title 'default'
unset multiplot
reset
set style fill solid 0.85 border -1
set grid ytics
set xtics rotate by -40 nomirror
set terminal pngcairo size 1090,560 noenhanced font ',9'
set rmargin 12
set output 'throughput_trace-test-results.png'
set title 'trace:test-results: operations per second (higher is better)'
set key off
set logscale y
set ylabel 'ops/s'
set xrange [-0.6:14]
set yrange [*:*]
plot 'plot_trace-test-results.dat' using 0:3:(0.8):2:xtic(1) with boxes lc variable
set output 'latency_trace-test-results.png'
set title 'trace:test-results: latency per operation in microseconds (lower is better)'
set key top left
set ylabel 'microseconds'
set style data histograms
set style histogram clustered gap 1
set xrange [*:*]
plot 'plot_trace-test-results.dat' using 4:xtic(1) title 'p50', '' using 5 title 'p99', '' using 6 title 'p99.9', '' using 7 title 'max'
set style data points
unset logscale y
set output 'fsyncs_trace-test-results.png'
set title 'trace:test-results: fsync + fdatasync + msync calls per commit'
set key off
set ylabel 'flushes per commit'
set xrange [-0.6:14]
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
plot 'plot_trace-test-results.dat' using 0:8:(0.8):2:xtic(1) with boxes lc variable
set yrange [*:*]
set xrange [*:*]
set offsets 0, 0, 0, 0
set terminal pngcairo size 1680,440 noenhanced font ',9'
set output 'percentiles_trace-test-results.png'
set multiplot layout 1,3 title "trace:test-results: latency by percentile (log scales; lower is better)" font ',11'
set logscale xy
set xrange [1:13188]
set yrange [0.113333:70060.3]
set xtics norotate ("0%%" 1, "90%%" 10, "99%%" 100, "99.9%%" 1000, "99.99%%" 10000, "99.999%%" 100000, "99.9999%%" 1000000)
set grid xtics ytics
set key top left opaque box
set ylabel 'microseconds'
set xlabel 'percentile'
set style data lines
set title 'journalkv, sync full'
plot 'percentiles_trace-test-results.dat' index 0 using 1:3 with lines lw 1.5 lc rgb '#9400d3' dt 1 title 'delete', \
     'percentiles_trace-test-results.dat' index 1 using 1:3 with lines lw 1.5 lc rgb '#009e73' dt 1 title 'truncate', \
     'percentiles_trace-test-results.dat' index 2 using 1:3 with lines lw 1.5 lc rgb '#0072b2' dt 1 title 'persist', \
     'percentiles_trace-test-results.dat' index 3 using 1:3 with lines lw 1.5 lc rgb '#e69f00' dt 1 title 'memory', \
     'percentiles_trace-test-results.dat' index 4 using 1:3 with lines lw 1.5 lc rgb '#e51e10' dt 1 title 'off', \
     'percentiles_trace-test-results.dat' index 5 using 1:3 with lines lw 1.5 lc rgb '#56b4e9' dt 1 title 'wal/default', \
     'percentiles_trace-test-results.dat' index 6 using 1:3 with lines lw 1.5 lc rgb '#000000' dt 1 title 'wal2/default'
set title 'sqlite, sync full'
plot 'percentiles_trace-test-results.dat' index 7 using 1:3 with lines lw 1.5 lc rgb '#9400d3' dt 1 title 'delete', \
     'percentiles_trace-test-results.dat' index 8 using 1:3 with lines lw 1.5 lc rgb '#009e73' dt 1 title 'truncate', \
     'percentiles_trace-test-results.dat' index 9 using 1:3 with lines lw 1.5 lc rgb '#0072b2' dt 1 title 'persist', \
     'percentiles_trace-test-results.dat' index 10 using 1:3 with lines lw 1.5 lc rgb '#e69f00' dt 1 title 'memory', \
     'percentiles_trace-test-results.dat' index 11 using 1:3 with lines lw 1.5 lc rgb '#e51e10' dt 1 title 'off', \
     'percentiles_trace-test-results.dat' index 12 using 1:3 with lines lw 1.5 lc rgb '#56b4e9' dt 1 title 'wal/default'
set title 'lmdb, sync full'
plot 'percentiles_trace-test-results.dat' index 13 using 1:3 with lines lw 1.5 lc rgb '#a0522d' dt 1 title 'default'
unset multiplot
reset
set style fill solid 0.85 border -1
set grid ytics
set xtics rotate by -40 nomirror
