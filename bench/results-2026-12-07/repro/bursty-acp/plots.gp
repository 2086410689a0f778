# Made by jkvbench --plot: run `gnuplot plots.gp` in this directory.
set style fill solid 0.85 border -1
set grid ytics
set xtics rotate by -40 nomirror
set terminal pngcairo size 1210,560 noenhanced font ',9'
set rmargin 12
set output 'throughput_bursty.png'
set title 'bursty: commits per second of write time, idle gaps left out (higher is better)'
set key off
set logscale y
set ylabel 'ops/s'
set xrange [-0.6:16]
set yrange [*:*]
plot 'plot_bursty.dat' using 0:3:(0.8):2:xtic(1) with boxes lc variable
set output 'latency_bursty.png'
set title 'bursty: latency per operation in microseconds (lower is better)'
set key top left
set ylabel 'microseconds'
set style data histograms
set style histogram clustered gap 1
set xrange [*:*]
plot 'plot_bursty.dat' using 4:xtic(1) title 'p50', '' using 5 title 'p99', '' using 6 title 'p99.9', '' using 7 title 'max'
set style data points
unset logscale y
set output 'fsyncs_bursty.png'
set title 'bursty: fsync + fdatasync + msync calls per commit'
set key off
set ylabel 'flushes per commit'
set xrange [-0.6:16]
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
plot 'plot_bursty.dat' using 0:8:(0.8):2:xtic(1) with boxes lc variable
set yrange [*:*]
set xrange [*:*]
set offsets 0, 0, 0, 0
set output 'write_time_bursty.png'
set title 'bursty: write time, the sum of the commits'' latencies, in ms (lower is better; idle gaps not included)'
set key off
set logscale y
set ylabel 'ms'
set xrange [-0.6:16]
set yrange [*:*]
plot 'plot_bursty.dat' using 0:9:(0.8):2:xtic(1) with boxes lc variable, '' using 0:9:(sprintf('%.1f', $9)) with labels offset 0,0.7 notitle
unset logscale y
set xrange [*:*]
set terminal pngcairo size 1120,840 noenhanced font ',9'
set output 'percentiles_bursty.png'
set multiplot layout 2,2 title "bursty: latency by percentile (log scales; lower is better)" font ',11'
set logscale xy
set xrange [1:3000]
set yrange [4.006:61761.3]
set xtics norotate ("0%%" 1, "90%%" 10, "99%%" 100, "99.9%%" 1000, "99.99%%" 10000, "99.999%%" 100000, "99.9999%%" 1000000)
set grid xtics ytics
set key top left opaque box
set ylabel 'microseconds'
set xlabel 'percentile'
set style data lines
set title 'journalkv, sync normal'
plot 'percentiles_bursty.dat' index 0 using 1:3 with lines lw 1.5 lc rgb '#9400d3' dt 1 title 'delete', \
     'percentiles_bursty.dat' index 2 using 1:3 with lines lw 1.5 lc rgb '#009e73' dt 1 title 'wal/async:0/100', \
     'percentiles_bursty.dat' index 3 using 1:3 with lines lw 1.5 lc rgb '#0072b2' dt 1 title 'wal/async:100/300', \
     'percentiles_bursty.dat' index 4 using 1:3 with lines lw 1.5 lc rgb '#e69f00' dt 1 title 'wal/threshold:1000', \
     'percentiles_bursty.dat' index 5 using 1:3 with lines lw 1.5 lc rgb '#e51e10' dt 1 title 'wal/threshold:100'
set title 'sqlite, sync normal'
plot 'percentiles_bursty.dat' index 10 using 1:3 with lines lw 1.5 lc rgb '#9400d3' dt 1 title 'delete', \
     'percentiles_bursty.dat' index 12 using 1:3 with lines lw 1.5 lc rgb '#e69f00' dt 1 title 'wal/threshold:1000', \
     'percentiles_bursty.dat' index 13 using 1:3 with lines lw 1.5 lc rgb '#e51e10' dt 1 title 'wal/threshold:100'
set title 'journalkv, sync full'
plot 'percentiles_bursty.dat' index 1 using 1:3 with lines lw 1.5 lc rgb '#9400d3' dt 1 title 'delete', \
     'percentiles_bursty.dat' index 6 using 1:3 with lines lw 1.5 lc rgb '#009e73' dt 1 title 'wal/async:0/100', \
     'percentiles_bursty.dat' index 7 using 1:3 with lines lw 1.5 lc rgb '#0072b2' dt 1 title 'wal/async:100/300', \
     'percentiles_bursty.dat' index 8 using 1:3 with lines lw 1.5 lc rgb '#e69f00' dt 1 title 'wal/threshold:1000', \
     'percentiles_bursty.dat' index 9 using 1:3 with lines lw 1.5 lc rgb '#e51e10' dt 1 title 'wal/threshold:100'
set title 'sqlite, sync full'
plot 'percentiles_bursty.dat' index 11 using 1:3 with lines lw 1.5 lc rgb '#9400d3' dt 1 title 'delete', \
     'percentiles_bursty.dat' index 14 using 1:3 with lines lw 1.5 lc rgb '#e69f00' dt 1 title 'wal/threshold:1000', \
     'percentiles_bursty.dat' index 15 using 1:3 with lines lw 1.5 lc rgb '#e51e10' dt 1 title 'wal/threshold:100'
unset multiplot
reset
set style fill solid 0.85 border -1
set grid ytics
set xtics rotate by -40 nomirror
