# Made by jkvbench --plot: run `gnuplot plots.gp` in this directory.
set style fill solid 0.85 border -1
set grid ytics
set xtics rotate by -40 nomirror
set terminal pngcairo size 900,560 noenhanced font ',9'
set rmargin 12
set output 'throughput_speedtest1-1000.png'
set title 'speedtest1-1000: operations per second (higher is better)'
set key off
set logscale y
set ylabel 'ops/s'
set xrange [-0.6:7]
set yrange [*:*]
plot 'plot_speedtest1-1000.dat' using 0:3:(0.8):2:xtic(1) with boxes lc variable
set output 'latency_speedtest1-1000.png'
set title 'speedtest1-1000: latency per operation in microseconds (lower is better)'
set key top left
set ylabel 'microseconds'
set style data histograms
set style histogram clustered gap 1
set xrange [*:*]
plot 'plot_speedtest1-1000.dat' using 4:xtic(1) title 'p50', '' using 5 title 'p99', '' using 6 title 'p99.9', '' using 7 title 'max'
set style data points
unset logscale y
set output 'fsyncs_speedtest1-1000.png'
set title 'speedtest1-1000: fsync + fdatasync + msync calls per commit'
set key off
set ylabel 'flushes per commit'
set xrange [-0.6:7]
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
plot 'plot_speedtest1-1000.dat' using 0:8:(0.8):2:xtic(1) with boxes lc variable
set yrange [*:*]
set xrange [*:*]
set offsets 0, 0, 0, 0
set terminal pngcairo size 1000,640 noenhanced font ',9'
set output 'percentiles_speedtest1-1000.png'
set multiplot layout 1,1 title "speedtest1-1000: latency by percentile (log scales; lower is better)" font ',11'
set logscale xy
set xrange [1:1500]
set yrange [69.7707:33972.4]
set xtics norotate ("0%%" 1, "90%%" 10, "99%%" 100, "99.9%%" 1000, "99.99%%" 10000, "99.999%%" 100000, "99.9999%%" 1000000)
set grid xtics ytics
set key top left opaque box
set ylabel 'microseconds'
set xlabel 'percentile'
set style data lines
set title ''
plot 'percentiles_speedtest1-1000.dat' index 0 using 1:3 with lines lw 1.5 lc rgb '#9400d3' dt 1 title 'journalkv/delete/full', \
     'percentiles_speedtest1-1000.dat' index 1 using 1:3 with lines lw 1.5 lc rgb '#009e73' dt 1 title 'journalkv/persist/full', \
     'percentiles_speedtest1-1000.dat' index 2 using 1:3 with lines lw 1.5 lc rgb '#0072b2' dt 1 title 'journalkv/wal/full/default', \
     'percentiles_speedtest1-1000.dat' index 3 using 1:3 with lines lw 1.5 lc rgb '#e69f00' dt 1 title 'journalkv/wal2/full/default', \
     'percentiles_speedtest1-1000.dat' index 4 using 1:3 with lines lw 1.5 lc rgb '#e51e10' dt 1 title 'sqlite/delete/full', \
     'percentiles_speedtest1-1000.dat' index 5 using 1:3 with lines lw 1.5 lc rgb '#56b4e9' dt 1 title 'sqlite/persist/full', \
     'percentiles_speedtest1-1000.dat' index 6 using 1:3 with lines lw 1.5 lc rgb '#000000' dt 1 title 'sqlite/wal/full/default'
unset multiplot
reset
set style fill solid 0.85 border -1
set grid ytics
set xtics rotate by -40 nomirror
